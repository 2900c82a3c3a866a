"""The pure status code: replica states, phase rules, conditions, cleanPodPolicy (table-driven)."""

from __future__ import annotations

import base64
import gzip
import json
from typing import Any

import pytest

from dihera.controller.decide.cleanup import plan_cleanup
from dihera.controller.decide.conditions import set_phase_condition
from dihera.controller.decide.replicas import attempt_of, exit_code, workflow_nodes
from dihera.controller.decide.status import progress_only, status_patch, task_status
from dihera.membership import Membership
from dihera.model import CleanPodPolicy
from tests.builders import pod_node, retry_node
from tests.unit.jobviews import (
    ALWAYS_FAILS,
    FAILED_ONCE,
    GROWN,
    JOB,
    REPLICAS,
    RESCHEDULING_2,
    RETIRED_NODES,
    RETRIED,
    RETRIED_UP,
    RUNNING_1,
    SHRUNK,
    T0,
    T1,
    T2,
    Observed,
    observe,
    pod,
    running,
    status_after,
    workflow,
)


@pytest.mark.parametrize(
    ("case", "obs", "old", "phase", "in_message"),
    [
        ("no workflow yet", observe(None, []), {}, "Pending", "creating"),
        ("workflow, no pods", observe(workflow("Pending"), []), {}, "Pending", "0/3 pods"),
        ("some pods", observe(workflow(), running(("learner", 0))), {}, "Pending", "2/3 pods"),
        (
            "all pods, one not ready",
            observe(workflow(), [*running(("learner", 0)), pod("learner", 0, ready=False)]),
            {},
            "Starting",
            "waiting",
        ),
        ("all ready", observe(workflow(), running()), {}, "Running", "all 3"),
        (
            "one finishing (main exited 0, wait still running), rest ready",
            observe(workflow(), [*running(("learner", 0)), pod("learner", 0, "Running", False, code=0)]),
            RUNNING_1,
            "Running",
            "all 3",
        ),
        (
            "one not ready after a main container exited non-zero is not done",
            observe(workflow(), [*running(("learner", 0)), pod("learner", 0, "Running", False, code=1)]),
            {},
            "Starting",
            "waiting",
        ),
        (
            "one done, rest ready",
            observe(workflow(), [*running(("learner", 0)), pod("learner", 0, "Succeeded", False)]),
            {},
            "Running",
            "",
        ),
        (
            "all succeeded",
            observe(workflow(), [pod(t, i, "Succeeded", False) for t, i in REPLICAS]),
            {},
            "Succeeded",
            "all 3",
        ),
        ("workflow succeeded", observe(workflow("Succeeded"), []), {}, "Succeeded", ""),
        ("failed, retry left", observe(workflow(), FAILED_ONCE, backoff=1), {}, "Restarting", "collector-1"),
        ("retry pod pending", observe(workflow(), RETRIED, backoff=1), {}, "Restarting", "collector-1"),
        ("retry pod up", observe(workflow(), RETRIED_UP, backoff=1), {}, "Running", ""),
        ("no retry left", observe(workflow(), ALWAYS_FAILS, backoff=1), {}, "Failed", "collector-1 (rank 2"),
        ("backoffLimit 0", observe(workflow(), FAILED_ONCE, backoff=0), {}, "Failed", "exit code 3"),
        ("workflow failed", observe(workflow("Failed", message="boom"), running()), {}, "Failed", "boom"),
        ("workflow deleted", observe(None, []), {"phase": "Running", "workflowName": JOB}, "Failed", "was deleted"),
        ("foreign workflow", observe(workflow(), [], foreign_workflow=True), {}, "Pending", "of a deleted DIJob"),
        (
            "invalid job",
            observe(None, [], 0, membership=None, invalid="spec.tasks[1].name: duplicate"),
            {},
            "Failed",
            "spec.tasks[1].name",
        ),
        (
            "scaled, new pod missing",
            observe(workflow(), running(("collector", 1))),
            {"membershipGeneration": 0, "phase": "Running"},
            "Rescheduling",
            "2/3 up",
        ),
        (
            "scaled up, new pod pending",
            observe(workflow(), [*running(), pod("collector", 2, "Pending", False)], membership=GROWN),
            RUNNING_1,
            "Rescheduling",
            "3/4 up",
        ),
        (
            "rescheduling, new pod up",
            observe(workflow(), [*running(), pod("collector", 2)], membership=GROWN),
            RESCHEDULING_2,
            "Running",
            "all 4",
        ),
        ("scaled down, survivors up", observe(workflow(), running(), membership=SHRUNK), RUNNING_1, "Running", "all 2"),
        (
            "retired replica's pod failed: not a failure",
            observe(
                workflow(retired=("collector-1",), nodes=RETIRED_NODES),
                [*running(("collector", 1)), pod("collector", 1, "Failed", False, code=137)],
                backoff=0,
                membership=SHRUNK,
            ),
            RUNNING_1,
            "Running",
            "all 2",
        ),
        (
            "retired in the Workflow, membership not yet read: left out",
            observe(workflow(retired=("collector-1",)), running(("collector", 1))),
            {"membershipGeneration": 1, "phase": "Running"},
            "Running",
            "all 2",
        ),
        (
            "survivors succeeded, retired replica's pod deleted",
            observe(
                workflow(retired=("collector-1",), nodes=RETIRED_NODES),
                [pod("learner", 0, "Succeeded", False), pod("collector", 0, "Succeeded", False)],
                membership=SHRUNK,
            ),
            {"membershipGeneration": 2, "phase": "Running", "reschedules": 1},
            "Succeeded",
            "all 2",
        ),
    ],
)
def test_phase(case: str, obs: Observed, old: dict[str, Any], phase: str, in_message: str) -> None:
    update = status_after(obs, old, T1)
    assert update.status["phase"] == phase, case
    current = [c for c in update.status["conditions"] if c["status"] == "True"]
    assert [c["type"] for c in current] == [phase]
    # the Kubernetes Job's convention: a Failed condition says why (its Event's reason), else Job<Phase>
    assert current[0]["reason"] == CAUSES.get(case, f"Job{phase}"), case
    assert in_message in current[0]["message"]


#: test_phase's cases whose condition names a cause, and that cause
CAUSES = {
    "no retry left": "BackoffLimitExceeded",
    "backoffLimit 0": "BackoffLimitExceeded",
    "workflow failed": "WorkflowFailed",
    "workflow deleted": "WorkflowDeleted",
    "invalid job": "InvalidJob",
}


@pytest.mark.parametrize(
    ("case", "obs", "old", "replicas", "reschedules", "restarts", "events"),
    [
        ("first status", observe(workflow(), running()), {}, 3, 0, 0, ["JobRunning"]),
        (
            "scale-up seen",
            observe(workflow(), running(), membership=GROWN),
            RUNNING_1,
            4,
            1,
            0,
            ["ReplicasChanged", "JobRescheduling"],
        ),
        ("still rescheduling", observe(workflow(), running(), membership=GROWN), RESCHEDULING_2, 4, 1, 0, []),
        (
            "scale-down seen",
            observe(workflow(retired=("collector-1",)), running(("collector", 1)), membership=SHRUNK),
            RUNNING_1,
            2,
            1,
            0,
            ["ReplicasChanged"],
        ),
        (
            "two changes between reads",
            observe(workflow(), running(), membership=Membership(3, SHRUNK.replicas)),
            RUNNING_1,
            2,
            2,
            0,
            ["ReplicasChanged"],
        ),
        (
            "retired replica had retried: no restart counted",
            observe(
                workflow(retired=("collector-1",)),
                [*running(("collector", 1)), pod("collector", 1, "Failed", False, attempt=2, code=3)],
                membership=SHRUNK,
            ),
            RUNNING_1,
            2,
            1,
            0,
            ["ReplicasChanged"],
        ),
        (
            "refused hand edit",
            observe(workflow(), running(), scale_refused="spec.tasks: outside its bounds"),
            {**RUNNING_1, "observedGeneration": 0},
            3,
            0,
            0,
            ["ScaleRefused"],
        ),
    ],
)
def test_scaling_status(
    case: str,
    obs: Observed,
    old: dict[str, Any],
    replicas: int,
    reschedules: int,
    restarts: int,
    events: list[str],
) -> None:
    update = status_after(obs, old, T1)
    s = update.status
    assert (s["replicas"], s["reschedules"], s["restarts"]) == (replicas, reschedules, restarts), case
    assert s["membershipGeneration"] == obs.membership.generation  # type: ignore[union-attr]
    assert [e.reason for e in update.events] == events, case


def test_replicas_changed_event_names_the_membership() -> None:
    update = status_after(observe(workflow(), running(), membership=GROWN), RUNNING_1, T1)
    assert update.events[0].message == "membership generation 2: 4 replicas (learner 1, collector 3)"


def test_restarts_count_attempts_beyond_the_first_and_never_shrink() -> None:
    update = status_after(observe(workflow(), RETRIED_UP, backoff=2), {}, T1)
    assert update.status["restarts"] == 1
    assert update.restarts_added == 1
    assert [e.reason for e in update.events] == ["ReplicaRestarted", "JobRunning"]
    again = status_after(observe(workflow(), running(), backoff=2), update.status, T2)  # old attempt pods gone
    assert again.status["restarts"] == 1


def test_restarts_past_backoff_limit_fail_the_job() -> None:
    pods = [pod("learner", 0, attempt=1), pod("collector", 0, attempt=1), pod("collector", 1)]
    update = status_after(observe(workflow(), pods, backoff=1), {}, T1)
    assert update.status["phase"] == "Failed"
    assert "2 restarts exceed backoffLimit 1" in update.status["conditions"][-1]["message"]


def test_attempts_are_read_from_workflow_nodes_too() -> None:
    nodes = {
        "a": retry_node(f"{JOB}.collector-1", "Running"),
        "b": pod_node(f"{JOB}.collector-1(0)", "Failed"),
        "c": pod_node(f"{JOB}.collector-1(1)", "Pending"),
    }
    update = status_after(observe(workflow(nodes=nodes), FAILED_ONCE, backoff=3), {}, T1)
    assert update.status["restarts"] == 1
    assert update.status["phase"] == "Restarting"
    assert update.status["taskStatus"] == {"learner": {"Running": 1}, "collector": {"Running": 1}}


def test_attempts_are_read_from_compressed_nodes_of_a_large_workflow() -> None:
    """Past 1 MiB Argo moves status.nodes to status.compressedNodes (gzip, base64): read the same from there."""
    nodes = {
        "a": retry_node(f"{JOB}.collector-1", "Running"),
        "b": pod_node(f"{JOB}.collector-1(0)", "Failed"),
        "c": pod_node(f"{JOB}.collector-1(1)", "Pending"),
    }
    packed = workflow()
    packed["status"]["compressedNodes"] = base64.b64encode(gzip.compress(json.dumps(nodes).encode())).decode()
    assert workflow_nodes(packed) == nodes
    plain = status_after(observe(workflow(nodes=nodes), FAILED_ONCE, backoff=3), {}, T1)
    assert status_after(observe(packed, FAILED_ONCE, backoff=3), {}, T1).status == plain.status
    packed["status"]["compressedNodes"] = base64.b64encode(b"not gzip").decode()  # zstd or brotli: not read
    assert workflow_nodes(packed) == {}


def test_status_fields() -> None:
    update = status_after(observe(workflow(), running()), {}, T1)
    s = update.status
    assert s["replicas"] == 3 and s["readyReplicas"] == 3
    assert s["taskStatus"] == {"learner": {"Running": 1}, "collector": {"Running": 2}}
    assert s["workflowName"] == JOB and s["membershipGeneration"] == 1 and s["observedGeneration"] == 1
    assert "completionTimestamp" not in s
    done = status_after(observe(workflow("Succeeded"), [pod(t, i, "Succeeded", False) for t, i in REPLICAS]), s, T2)
    assert done.status["completionTimestamp"] == T2
    assert [(c["type"], c["status"]) for c in done.status["conditions"]] == [
        ("Running", "False"),
        ("Succeeded", "True"),
    ]


def test_unchanged_observation_writes_nothing() -> None:
    first = status_after(observe(workflow(), running()), {}, T1)
    second = status_after(observe(workflow(), running()), first.status, T2)
    assert not second.changed and second.events == ()


def test_the_di_servers_training_figures_are_no_change_of_the_controllers() -> None:
    """A status.training written by the di-server (once a second) neither makes a write nor is dropped: a write
    per write would loop (each bumps the DIJob, which queues a pass)."""
    first = status_after(observe(workflow(), running()), {}, T1)
    figures = {"iteration": 12, "curve": [{"iteration": 12, "envStepsPerSecond": 3.0}]}
    second = status_after(observe(workflow(), running()), {**first.status, "training": figures}, T2)
    assert not second.changed and second.status["training"] == figures
    assert status_patch(_body({**first.status, "training": figures}), second.status) == []


def test_more_pods_in_the_same_phase_is_progress_only() -> None:
    # Pending counts the pods created in its message; Starting does not
    pending = status_after(observe(workflow(), running(("learner", 0), ("collector", 1))), {}, T1).status
    more = status_after(observe(workflow(), running(("learner", 0))), pending, T2).status
    assert pending["phase"] == more["phase"] == "Pending" and more != pending
    assert progress_only(pending, more)


#: collector-1's pod, Pending: the scheduler finds no node
UNSCHEDULABLE = pod("collector", 1, "Pending", False)
UNSCHEDULABLE["status"]["conditions"] = [
    {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/3 nodes are available"}
]


@pytest.mark.parametrize(
    ("case", "pods", "wf_phase"),
    [
        ("the phase changes", running(), "Running"),
        (
            "a replica is stuck (stuckReplicas, its Warning)",
            [*running(("learner", 0), ("collector", 1)), UNSCHEDULABLE],
            "Running",
        ),
        ("the Workflow fails", running(("learner", 0)), "Failed"),
    ],
)
def test_a_change_beyond_progress_is_not_progress_only(case: str, pods: list[dict[str, Any]], wf_phase: str) -> None:
    old = status_after(observe(workflow(), running(("learner", 0))), {}, T1).status
    new = status_after(observe(workflow(wf_phase), pods), old, T2).status
    assert new != old and not progress_only(old, new), case


def test_progress_only_needs_a_written_status() -> None:
    new = status_after(observe(workflow(), running(("learner", 0))), {}, T1).status
    assert not progress_only({}, new)
    assert not progress_only(new, {**new, "observedGeneration": 2})
    changed_reason = [{**c, "reason": "Other"} for c in new["conditions"]]
    assert not progress_only(new, {**new, "conditions": changed_reason})
    assert progress_only(
        new, {**new, "readyReplicas": 3, "conditions": [{**c, "message": "m"} for c in new["conditions"]]}
    )


def test_terminal_status_is_final() -> None:
    old = {"phase": "Failed", "conditions": [], "restarts": 4}
    update = status_after(observe(workflow(), running()), old, T2)
    assert update.status == old and not update.changed


def test_task_status_counts_current_attempts_only() -> None:
    update = status_after(observe(workflow(), RETRIED, backoff=3), {}, T1)
    assert task_status(update.states) == {"learner": {"Running": 1}, "collector": {"Running": 1, "Pending": 1}}


@pytest.mark.parametrize(
    ("before", "phase", "message", "after"),
    [
        ([], "Pending", "m", [("Pending", "True", T1, T1)]),
        ([("Pending", "True", T0, T0)], "Pending", "m", [("Pending", "True", T0, T0)]),
        ([("Pending", "True", T0, T0)], "Pending", "new", [("Pending", "True", T0, T1)]),
        ([("Pending", "True", T0, T0)], "Running", "m", [("Pending", "False", T1, T1), ("Running", "True", T1, T1)]),
        (  # the True condition, the phase's, is the last: the newest one a reader finds
            [("Running", "False", T0, T0), ("Restarting", "True", T0, T0)],
            "Running",
            "m",
            [("Restarting", "False", T1, T1), ("Running", "True", T1, T1)],
        ),
    ],
)
def test_conditions(
    before: list[tuple[str, str, str, str]], phase: str, message: str, after: list[tuple[str, str, str, str]]
) -> None:
    conds = [
        {"type": t, "status": s, "lastTransitionTime": lt, "lastUpdateTime": lu, "message": "m"}
        for t, s, lt, lu in before
    ]
    out = set_phase_condition(conds, phase, message, T1)
    assert [(c["type"], c["status"], c["lastTransitionTime"], c["lastUpdateTime"]) for c in out] == after


@pytest.mark.parametrize(
    ("policy", "phase", "wf_phase", "shutdown", "deleted"),
    [
        (CleanPodPolicy.RUNNING, "Running", "Running", False, ()),
        (CleanPodPolicy.RUNNING, "Failed", "Running", True, ("p-pending", "p-running")),
        (CleanPodPolicy.RUNNING, "Failed", "Failed", False, ("p-pending", "p-running")),
        # a successPolicy ended the job while pods still run: the Workflow is stopped so Argo does not retry them
        (CleanPodPolicy.RUNNING, "Succeeded", "Running", True, ("p-pending", "p-running")),
        (CleanPodPolicy.ALL, "Succeeded", "Succeeded", False, ("p-failed", "p-pending", "p-running", "p-succeeded")),
        (CleanPodPolicy.ALL, "Failed", "Running", True, ("p-failed", "p-pending", "p-running", "p-succeeded")),
        (CleanPodPolicy.NONE, "Failed", "Running", False, ()),
    ],
)
def test_cleanup(policy: CleanPodPolicy, phase: str, wf_phase: str, shutdown: bool, deleted: tuple[str, ...]) -> None:
    pods = [
        {"metadata": {"name": f"p-{p.lower()}"}, "status": {"phase": p}}
        for p in ("Pending", "Running", "Succeeded", "Failed")
    ]
    pods.append({"metadata": {"name": "p-going", "deletionTimestamp": T0}, "status": {"phase": "Running"}})
    plan = plan_cleanup(policy, phase, workflow(wf_phase), pods)
    assert plan.shutdown_workflow is shutdown
    assert plan.delete_pods == deleted


def test_cleanup_leaves_a_succeeded_workflow_alone_once_every_pod_is_done() -> None:
    """Every replica succeeded: Argo is about to mark the Workflow Succeeded; stopping it would make it Failed."""
    pods = [{"metadata": {"name": f"p-{i}"}, "status": {"phase": "Succeeded"}} for i in range(2)]
    plan = plan_cleanup(CleanPodPolicy.RUNNING, "Succeeded", workflow("Running"), pods)
    assert plan.empty


@pytest.mark.parametrize("policy", [CleanPodPolicy.RUNNING, CleanPodPolicy.ALL])
def test_cleanup_lets_a_pod_whose_containers_all_exited_0_store_its_outputs_and_end(policy: CleanPodPolicy) -> None:
    """Its wait container (and the artifact collector) still run: deleting the pod would lose its artifacts and
    log and make Argo fail its node. Under All it is deleted once it has ended."""
    finishing = {
        "metadata": {"name": "p-0"},
        "status": {
            "phase": "Running",
            "containerStatuses": [
                {"name": "wait", "state": {"running": {}}},
                {"name": "di-container", "state": {"terminated": {"exitCode": 0}}},
            ],
        },
    }
    assert plan_cleanup(policy, "Succeeded", workflow("Running"), [finishing]).empty
    running = {
        **finishing,
        "status": {**finishing["status"], "containerStatuses": [{"name": "x", "state": {"running": {}}}]},
    }
    assert plan_cleanup(policy, "Succeeded", workflow("Running"), [running]).delete_pods == ("p-0",)
    ended = {**finishing, "status": {**finishing["status"], "phase": "Succeeded"}}
    # Argo has not recorded its end yet (it would make the pod again): deleted once the Workflow completed
    assert plan_cleanup(policy, "Succeeded", workflow("Running"), [ended]).empty
    deleted = ("p-0",) if policy is CleanPodPolicy.ALL else ()
    assert plan_cleanup(policy, "Succeeded", workflow("Succeeded"), [ended]).delete_pods == deleted


@pytest.mark.parametrize(
    ("name", "attempt"), [("job.collector-1", 0), ("job.collector-1(0)", 0), ("job.collector-1(12)", 12)]
)
def test_attempt_of(name: str, attempt: int) -> None:
    assert attempt_of(name) == attempt


def test_exit_code_skips_argo_containers() -> None:
    assert exit_code(pod("collector", 1, "Failed", code=7)) == 7
    assert exit_code(pod("collector", 1, "Succeeded", code=0)) == 0
    assert exit_code(pod("collector", 1)) is None


# -- status_patch: the controller writes only its own fields --------------------------------------


def _body(status: dict[str, Any] | None) -> dict[str, Any]:
    body: dict[str, Any] = {"metadata": {"name": "j", "resourceVersion": "41"}}
    if status is not None:
        body["status"] = status
    return body


def test_status_patch_never_touches_a_field_the_controller_does_not_own() -> None:
    import jsonpatch  # type: ignore[import-untyped]

    read = _body({"phase": "Starting", "replicas": 2, "profilings": {"a": 1}})
    ops = status_patch(read, {"phase": "Running", "replicas": 2, "profilings": {"a": 1}})
    assert ops == [{"op": "add", "path": "/status/phase", "value": "Running"}]
    # the di-server recorded more profilings after the controller's read: they survive the patch
    now = _body({"phase": "Starting", "replicas": 2, "profilings": {"a": 1, "b": 2}})
    after = jsonpatch.apply_patch(now, ops)["status"]
    assert after == {"phase": "Running", "replicas": 2, "profilings": {"a": 1, "b": 2}}


def test_status_patch_removes_a_field_that_went_away_and_skips_unchanged_ones() -> None:
    read = _body({"phase": "Running", "workflowName": "j", "completionTimestamp": "t"})
    assert status_patch(read, {"phase": "Running", "workflowName": "j"}) == [
        {"op": "remove", "path": "/status/completionTimestamp"}
    ]
    assert status_patch(read, dict(read["status"])) == []


def test_the_first_status_is_created_under_a_resource_version_precondition() -> None:
    ops = status_patch(_body(None), {"phase": "Pending"})
    assert ops == [
        {"op": "replace", "path": "/metadata/resourceVersion", "value": "41"},
        {"op": "add", "path": "/status", "value": {}},
        {"op": "add", "path": "/status/phase", "value": "Pending"},
    ]
