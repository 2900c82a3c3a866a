"""The phase policies (dihera/controller/decide/phase.py): each one alone on the facts of a pass, and the
table's order (the first that answers wins)."""

from __future__ import annotations

from typing import Any

import pytest

from dihera.constants import EventReason, Phase
from dihera.controller.decide import phase
from dihera.controller.decide.phase import POLICIES, Facts, decide_phase, facts, running_or_starting
from dihera.membership import Membership, Replica
from tests.builders import pod_node
from tests.unit.jobviews import (
    ALWAYS_FAILS,
    FAILED_ONCE,
    GROWN,
    REPLICAS,
    RETRIED,
    RUNNING_1,
    T1,
    Observed,
    observe,
    pod,
    running,
    workflow,
)

ALL_DONE = [pod(t, i, "Succeeded", False) for t, i in REPLICAS]


def facts_of(obs: Observed, old: dict[str, Any] | None = None) -> Facts:
    return facts(obs.view(old), obs.hold(), T1)


def test_the_table_lists_every_policy_once_in_the_documented_order() -> None:
    names = [p.__name__ for p in POLICIES]
    assert names == [
        "invalid_job",
        "held",
        "workflow_deleted",
        "deadline_exceeded",
        "object_conflict",
        "workflow_not_created",
        "foreign_workflow",
        "workflow_shut_down",
        "drop_bound_reached",
        "backoff_exceeded",
        "retries_exhausted",
        "workflow_failed",
        "training_ended",
        "succeeded",
        "rescheduling",
        "replica_failed",
        "retry_not_up",
        "pods_missing",
    ]
    doc = phase.__doc__ or ""
    positions = [doc.index(f" {name} ") for name in names]
    assert positions == sorted(positions), "the module docstring lists the policies in another order"


@pytest.mark.parametrize(
    ("policy", "obs", "old", "answer"),
    [
        (phase.invalid_job, observe(None, [], membership=None, invalid="spec: bad"), {}, (Phase.FAILED, "InvalidJob")),
        (phase.invalid_job, observe(workflow(), running()), {}, None),
        (phase.workflow_deleted, observe(None, []), {"workflowName": "job"}, (Phase.FAILED, "WorkflowDeleted")),
        (phase.workflow_deleted, observe(None, []), {}, None),  # never created: not deleted
        (phase.workflow_not_created, observe(None, []), {}, (Phase.PENDING, None)),
        (phase.foreign_workflow, observe(workflow(), [], foreign_workflow=True), {}, (Phase.PENDING, None)),
        (phase.workflow_failed, observe(workflow("Error"), running()), {}, (Phase.FAILED, "WorkflowFailed")),
        (phase.workflow_failed, observe(workflow("Succeeded"), running()), {}, None),
        (phase.rescheduling, observe(workflow(), running(), membership=GROWN), RUNNING_1, (Phase.RESCHEDULING, None)),
        (phase.rescheduling, observe(workflow(), running()), RUNNING_1, None),  # same generation
        (phase.pods_missing, observe(workflow(), running(("learner", 0))), {}, (Phase.PENDING, None)),
        (phase.pods_missing, observe(workflow(), running()), {}, None),
    ],
)
def test_each_core_policy_answers_only_for_its_case(
    policy: phase.Policy, obs: Observed, old: dict[str, Any], answer: tuple[Phase, str | None] | None
) -> None:
    decision = policy(facts_of(obs, old))
    if answer is None:
        assert decision is None
    else:
        assert decision is not None and (decision.phase, decision.cause) == answer


def test_running_needs_every_replica_up_else_starting() -> None:
    assert running_or_starting(facts_of(observe(workflow(), running()))).phase is Phase.RUNNING
    not_ready = [*running(("learner", 0)), pod("learner", 0, ready=False)]
    assert running_or_starting(facts_of(observe(workflow(), not_ready))).phase is Phase.STARTING


@pytest.mark.parametrize(
    ("case", "obs", "old", "phase_", "cause"),
    [
        # an invalid job is Failed even while held
        ("invalid beats held", observe(None, [], membership=None, invalid="x", suspended="held"), {}, "Failed", None),
        ("held beats deleted", observe(None, [], suspended="spec.suspend"), {"workflowName": "job"}, "Suspended", None),
        (
            "a deadline beats a failure",
            observe(workflow("Failed"), ALWAYS_FAILS, backoff=1, active_deadline_seconds=1),
            {"startTime": "2026-01-01T00:00:00Z"},
            "Failed",
            EventReason.DEADLINE_EXCEEDED,
        ),
        (
            "retries exhausted beat a failed Workflow",
            observe(workflow("Failed"), ALWAYS_FAILS, backoff=1),
            {},
            "Failed",
            EventReason.BACKOFF_LIMIT_EXCEEDED,
        ),
        (
            "a failed Workflow beats success",
            observe(workflow("Failed"), ALL_DONE),
            {},
            "Failed",
            EventReason.WORKFLOW_FAILED,
        ),
        ("a failure to retry beats pods missing", observe(workflow(), FAILED_ONCE[2:]), {}, "Restarting", None),
        ("a pending retry is Restarting", observe(workflow(), RETRIED, backoff=3), {}, "Restarting", None),
    ],
)
def test_the_first_policy_that_answers_wins(
    case: str, obs: Observed, old: dict[str, Any], phase_: str, cause: str | None
) -> None:
    decision = decide_phase(facts_of(obs, old))
    assert decision.phase == phase_, case
    if cause is not None:
        assert decision.cause == cause, case


def test_a_dropped_replica_is_not_among_the_replicas_the_policies_count() -> None:
    """failurePolicy DropReplica: collector-1 exhausted its retries and is dropped: the job runs on with 2."""
    exhausted = [pod("learner", 0), pod("collector", 0), pod("collector", 1, "Failed", False, attempt=1, code=3)]
    f = facts_of(observe(workflow(), exhausted, backoff=1, drop_tasks=frozenset({"collector"})), RUNNING_1)
    assert [s.name for s in f.kept] == ["learner-0", "collector-0"] and f.drops.remove == ("collector-1",)
    assert decide_phase(f).phase is Phase.RUNNING


def test_the_facts_of_a_held_job_have_no_deadline_and_a_resume_starts_the_clock_again() -> None:
    held = facts_of(observe(workflow(), running(), suspended="held", active_deadline_seconds=1), {"startTime": "x"})
    assert held.deadline_left is None and held.deadline_passed is None and held.start == "x"
    resumed = facts_of(observe(workflow(), running(), active_deadline_seconds=600), {"phase": "Suspended"})
    assert resumed.start == T1 and resumed.deadline_left == 600


def test_a_membership_of_one_replica_per_task_is_read_as_given() -> None:
    one = Membership(1, (Replica(0, "learner", 0), Replica(1, "collector", 0)))
    f = facts_of(observe(workflow(), [pod("learner", 0), pod("collector", 0)], membership=one))
    assert [s.name for s in f.kept] == ["learner-0", "collector-0"] and decide_phase(f).phase is Phase.RUNNING


def test_pods_missing_names_what_argo_says_of_the_replicas_it_could_not_create() -> None:
    nodes = {
        "n": pod_node("job.collector-1", "Pending", message='configmap "di-job" not found')
    }
    f = facts_of(observe(workflow(nodes=nodes), running(("collector", 1))))
    decision = phase.pods_missing(f)
    assert decision is not None and decision.phase is Phase.PENDING
    assert decision.message == '2/3 pods created; Argo says: collector-1: configmap "di-job" not found'
    quiet = phase.pods_missing(facts_of(observe(workflow(), running(("collector", 1)))))
    assert quiet is not None and quiet.message == "2/3 pods created"
