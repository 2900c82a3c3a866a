"""spec.tasks[].failurePolicy (pure): which replicas are dropped, the bound, restarts, and what the status says."""

from __future__ import annotations

from typing import Any

import pytest

from dihera.controller.decide.failures import DropPlan, plan_drops, restart_counts
from dihera.controller.decide.replicas import ReplicaState
from tests.unit.jobviews import FAILED_ONCE, T1, observe, pod, running, status_after, workflow

DROP = frozenset({"collector"})


def state(task: str, index: int, rank: int, attempt: int = 0, failed: bool = False) -> ReplicaState:
    return ReplicaState(
        task=task,
        index=index,
        rank=rank,
        hostname=f"job-{task}-{index}",
        attempt=attempt,
        pod_name=f"p-{task}-{index}-{attempt}",
        pod_phase="Failed" if failed else "Running",
        ready=not failed,
        exit_code=3 if failed else None,
        failed=failed,
    )


LEARNER = state("learner", 0, 0)
C0, C2 = state("collector", 0, 1), state("collector", 2, 3)
C1_EXHAUSTED = state("collector", 1, 2, attempt=2, failed=True)
C1_RETRYING = state("collector", 1, 2, attempt=1, failed=True)
C2_EXHAUSTED = state("collector", 2, 3, attempt=2, failed=True)


def drops(states: list[ReplicaState], tasks: frozenset[str] = DROP, **kw: Any) -> DropPlan:
    args: dict[str, Any] = {"backoff_limit": 2, "min_replicas": None, "old_dropped": (), "generation": 1, **kw}
    return plan_drops(
        states, tasks, args["backoff_limit"], args["min_replicas"], args["old_dropped"], args["generation"], T1
    )


def test_a_replica_of_a_drop_task_that_exhausted_its_retries_is_dropped() -> None:
    plan = drops([LEARNER, C0, C1_EXHAUSTED, C2])
    assert plan.remove == ("collector-1",) and plan.refused is None
    (entry,) = plan.new
    assert entry == {
        "replica": "collector-1",
        "rank": 2,
        "restarts": 2,
        "message": "replica collector-1 (rank 2, pod p-collector-1-2) failed with exit code 3 after 2 restart(s)",
        "time": T1,
        "generation": 1,
    }
    assert plan.dropped == plan.new


@pytest.mark.parametrize(
    ("case", "states", "tasks"),
    [
        ("retries left", [LEARNER, C0, C1_RETRYING], DROP),
        ("a FailJob task: phase.py fails the job", [LEARNER, C0, C1_EXHAUSTED], frozenset()),
        ("nothing failed", [LEARNER, C0, C2], DROP),
    ],
)
def test_nothing_is_dropped(case: str, states: list[ReplicaState], tasks: frozenset[str]) -> None:
    plan = drops(states, tasks)
    assert (plan.dropped, plan.remove, plan.refused) == ((), (), None), case


@pytest.mark.parametrize(
    ("case", "states", "min_replicas", "why"),
    [
        (
            "the task's last replica",
            [LEARNER, C1_EXHAUSTED],
            None,
            "task 'collector' would have no replica left (a task keeps at least 1)",
        ),
        (
            "below minReplicas",
            [LEARNER, C0, C1_EXHAUSTED],
            3,
            "the job would have 2 replica(s) left, below minReplicas 3",
        ),
    ],
)
def test_a_drop_past_the_bound_fails_the_job_naming_it(
    case: str, states: list[ReplicaState], min_replicas: int | None, why: str
) -> None:
    plan = drops(states, min_replicas=min_replicas)
    assert plan.dropped == () and plan.remove == ()
    assert plan.refused == (
        "replica collector-1 (rank 2, pod p-collector-1-2) failed with exit code 3 after 2 restart(s), its retries "
        f"(backoffLimit 2) exhausted; failurePolicy DropReplica cannot drop it: {why}"
    ), case


def test_two_exhausted_at_once_drop_in_rank_order_until_the_bound() -> None:
    plan = drops([LEARNER, C0, C1_EXHAUSTED, C2_EXHAUSTED], min_replicas=3)
    assert [e["replica"] for e in plan.new] == ["collector-1"]
    assert plan.refused is not None and plan.refused.startswith("replica collector-2 (rank 3")


def test_a_drop_recorded_but_not_applied_yet_is_applied_again_and_not_recounted() -> None:
    old = [{"replica": "collector-1", "rank": 2, "restarts": 2, "message": "m", "time": "t0", "generation": 1}]
    plan = drops([LEARNER, C0, C1_EXHAUSTED, C2], min_replicas=3, old_dropped=old)
    assert plan.new == () and plan.remove == ("collector-1",) and plan.refused is None
    assert plan.dropped == tuple(old)
    gone = drops([LEARNER, C0, C2], min_replicas=3, old_dropped=old, generation=2)  # the scale-down happened
    assert gone.remove == () and gone.dropped == tuple(old)


def test_a_new_replica_reusing_a_dropped_name_in_a_later_membership_is_the_jobs() -> None:
    """After a resume the Workflow has no tombstones, so a scale-up may take a dropped replica's index again."""
    old = [{"replica": "collector-1", "rank": 2, "restarts": 2, "message": "m", "time": "t0", "generation": 1}]
    again = state("collector", 1, 2)
    plan = drops([LEARNER, C0, again, C2], old_dropped=old, generation=3)
    assert plan.remove == () and plan.names == frozenset() and plan.dropped == tuple(old)


@pytest.mark.parametrize(
    ("case", "states", "old_dropped", "old_restarts", "expected"),
    [
        ("no drop task: as before", [state("learner", 0, 0, attempt=1), C0], (), 0, (1, 1)),
        ("a drop task's restarts are not counted", [LEARNER, C0, C1_RETRYING], (), 0, (1, 0)),
        (
            "a dropped replica's restarts stay in the total, out of the budget",
            [state("learner", 0, 0, attempt=1), C0, C2],
            ({"replica": "collector-1", "restarts": 2},),
            2,
            (3, 1),
        ),
        ("never decreases", [LEARNER, C0], (), 4, (4, 4)),
    ],
)
def test_restart_counts(
    case: str,
    states: list[ReplicaState],
    old_dropped: tuple[dict[str, Any], ...],
    old_restarts: int,
    expected: tuple[int, int],
) -> None:
    plan = DropPlan(dropped=old_dropped)
    assert restart_counts(states, plan, DROP, old_restarts) == expected, case


# -- what compute_status makes of it ------------------------------------------------------------------------------

COLLECTOR_1_EXHAUSTED = [*running(("collector", 1)), pod("collector", 1, "Failed", False, attempt=1, code=3)]


def test_the_status_records_the_drop_keeps_running_and_asks_for_the_scale_down() -> None:
    obs = observe(workflow(), COLLECTOR_1_EXHAUSTED, backoff=1, drop_tasks=DROP)
    update = status_after(obs, {"phase": "Running", "membershipGeneration": 1}, T1)
    status = update.status
    assert status["phase"] == "Running" and status["replicas"] == 2 and status["restarts"] == 1
    assert [e["replica"] for e in status["droppedReplicas"]] == ["collector-1"]
    message = status["conditions"][-1]["message"]
    assert message == (
        "all 2 replicas are running; 1 replica(s) dropped by failurePolicy DropReplica: collector-1 (rank 2)"
    )
    assert update.drops == ("collector-1",)
    (dropped,) = [e for e in update.events if e.reason == "ReplicaDropped"]
    assert dropped.type == "Warning" and dropped.message.endswith(
        "dropped from the job (failurePolicy DropReplica), 2 replicas left (learner 1, collector 1)"
    )


def test_the_same_failure_of_a_failjob_task_fails_the_job() -> None:
    obs = observe(workflow(), COLLECTOR_1_EXHAUSTED, backoff=1)
    update = status_after(obs, {"phase": "Running", "membershipGeneration": 1}, T1)
    assert update.status["phase"] == "Failed" and update.drops == () and "droppedReplicas" not in update.status


def test_a_drop_past_minreplicas_fails_the_job_with_its_own_reason() -> None:
    obs = observe(workflow(), COLLECTOR_1_EXHAUSTED, backoff=1, drop_tasks=DROP, min_replicas=3)
    update = status_after(obs, {"phase": "Running", "membershipGeneration": 1}, T1)
    assert update.status["phase"] == "Failed" and update.drops == ()
    (failed,) = [e for e in update.events if e.reason == "DropBoundReached"]
    assert "below minReplicas 3" in failed.message


def test_restarts_of_a_drop_task_leave_the_backoff_budget_alone() -> None:
    """backoffLimit 1 and collector-1 retrying once: a FailJob job would be Failed (restarts ≥ backoffLimit)."""
    retried = [*FAILED_ONCE, pod("collector", 1, "Failed", False, attempt=1, code=3)]
    learner_failed = [pod("learner", 0, "Failed", False, code=2), *retried[1:]]
    obs = observe(workflow(), learner_failed, backoff=1, drop_tasks=DROP)
    update = status_after(obs, {"phase": "Running", "membershipGeneration": 1}, T1)
    # collector-1's restart does not count: the learner's failure (attempt 0, budget 0) is retried
    assert update.status["phase"] == "Restarting", update.status
    assert update.status["restarts"] == 1 and update.drops == ("collector-1",)
