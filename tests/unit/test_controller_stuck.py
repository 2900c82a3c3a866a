"""Why a replica is stuck (pure): the pod status read, the status fields, the condition message, the Events."""

from __future__ import annotations

from typing import Any

import pytest

from dihera.controller.decide.stuck import pod_problem
from tests.unit.jobviews import T1, T2, observe, pod, running, status_after, workflow

UNSCHEDULABLE = {
    "type": "PodScheduled",
    "status": "False",
    "reason": "Unschedulable",
    "message": "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.",
}


def waiting(reason: str, message: str = "", name: str = "main") -> dict[str, Any]:
    return {"name": name, "state": {"waiting": {"reason": reason, "message": message}}}


def with_status(p: dict[str, Any], **status: Any) -> dict[str, Any]:
    p["status"].update(status)
    return p


def oom(where: str) -> dict[str, Any]:
    return {"name": "main", where: {"terminated": {"reason": "OOMKilled", "exitCode": 137}}}


@pytest.mark.parametrize(
    ("status", "spec", "expected"),
    [
        ({"phase": "Running"}, {}, None),
        ({"phase": "Pending", "conditions": [UNSCHEDULABLE]}, {}, ("Unschedulable", UNSCHEDULABLE["message"])),
        (
            {"phase": "Pending", "conditions": [{**UNSCHEDULABLE, "reason": "SchedulingGated"}]},
            {},
            None,
        ),
        (
            {"phase": "Pending", "containerStatuses": [waiting("ImagePullBackOff", 'Back-off pulling image "x"')]},
            {},
            ("ImagePullBackOff", 'container main: Back-off pulling image "x"'),
        ),
        ({"containerStatuses": [waiting("ErrImagePull")]}, {}, ("ErrImagePull", "container main")),
        ({"containerStatuses": [waiting("ContainerCreating")]}, {}, None),
        (
            {"initContainerStatuses": [waiting("InvalidImageName", "bad", "init")], "containerStatuses": []},
            {},
            ("InvalidImageName", "container init: bad"),
        ),
        (
            {"containerStatuses": [waiting("CrashLoopBackOff", "back-off 10s")]},
            {},
            ("CrashLoopBackOff", "container main: back-off 10s"),
        ),
        (
            {"phase": "Failed", "containerStatuses": [oom("state")]},
            {"containers": [{"name": "main", "resources": {"limits": {"memory": "64Mi"}}}]},
            ("OOMKilled", "container main was killed for using too much memory (memory limit 64Mi)"),
        ),
        (
            {"phase": "Running", "containerStatuses": [oom("lastState")]},
            {},
            ("OOMKilled", "container main was killed for using too much memory"),
        ),
        (
            {"containerStatuses": [waiting("CreateContainerConfigError", "secret x not found")]},
            {},
            ("CreateContainerConfigError", "container main: secret x not found"),
        ),
    ],
)
def test_pod_problem(status: dict[str, Any], spec: dict[str, Any], expected: tuple[str, str] | None) -> None:
    assert pod_problem({"metadata": {"name": "p"}, "spec": spec, "status": status}) == expected


def test_a_pod_being_deleted_is_not_stuck() -> None:
    going = {"metadata": {"name": "p", "deletionTimestamp": T1}, "status": {"conditions": [UNSCHEDULABLE]}}
    assert pod_problem(going) is None and pod_problem(None) is None


def unschedulable_learner() -> list[dict[str, Any]]:
    stuck = with_status(pod("learner", 0, "Pending", False), conditions=[UNSCHEDULABLE])
    return [stuck, pod("collector", 0), pod("collector", 1)]


def test_an_unschedulable_replica_is_in_status_the_message_and_one_event() -> None:
    update = status_after(observe(workflow(), unschedulable_learner()), {"phase": "Pending"}, T1)
    s = update.status
    assert s["phase"] == "Starting"
    assert s["stuckReplicas"] == [
        {
            "replica": "learner-0",
            "pod": "job-learner-0-0",
            "reason": "Unschedulable",
            "message": UNSCHEDULABLE["message"],
        }
    ]
    message = s["conditions"][-1]["message"]
    assert "replica learner-0 (pod job-learner-0-0) is Unschedulable: 0/3 nodes are available" in message
    assert [(e.type, e.reason) for e in update.events if e.reason == "ReplicaStuck"] == [("Warning", "ReplicaStuck")]
    again = status_after(observe(workflow(), unschedulable_learner()), s, T2)
    assert not again.changed and again.events == ()  # one Event per replica and reason


def test_once_scheduled_the_entry_goes_away() -> None:
    first = status_after(observe(workflow(), unschedulable_learner()), {"phase": "Pending"}, T1)
    later = status_after(observe(workflow(), running()), first.status, T2)
    assert "stuckReplicas" not in later.status and later.status["phase"] == "Running"
    assert "Unschedulable" not in later.status["conditions"][-1]["message"]


def test_an_oom_killed_replica_is_named_in_the_restarting_message() -> None:
    killed = with_status(pod("collector", 1, "Failed", False, attempt=0, code=137), containerStatuses=[oom("state")])
    update = status_after(observe(workflow(), [pod("learner", 0), pod("collector", 0), killed]), {}, T1)
    s = update.status
    assert s["phase"] == "Restarting"
    assert "failed with exit code 137 (OOMKilled)" in s["conditions"][-1]["message"]
    assert s["stuckReplicas"][0]["reason"] == "OOMKilled"
    assert "ReplicaStuck" in [e.reason for e in update.events]


@pytest.mark.parametrize(
    ("retry", "named"),
    [(None, True), ("Pending", True), ("Running", False)],
)
def test_an_oom_killed_attempt_stays_named_until_its_retry_runs(retry: str | None, named: bool) -> None:
    """Argo may create the retry before the controller's pass: the OOMKilled attempt is not lost then."""
    killed = with_status(pod("collector", 1, "Failed", False, attempt=0, code=137), containerStatuses=[oom("state")])
    pods = [pod("learner", 0), pod("collector", 0), killed]
    if retry is not None:
        pods.append(pod("collector", 1, retry, retry == "Running", attempt=1))
    update = status_after(observe(workflow(), pods), {}, T1)
    entries = update.status.get("stuckReplicas") or []
    assert [(e["replica"], e["reason"]) for e in entries] == ([("collector-1", "OOMKilled")] if named else [])
    assert update.status["phase"] == ("Running" if retry == "Running" else "Restarting")


def test_a_succeeded_job_lists_no_stuck_replica() -> None:
    done = [pod(t, i, "Succeeded", False) for t, i in (("learner", 0), ("collector", 0))]
    stuck = with_status(pod("collector", 1, "Pending", False), conditions=[UNSCHEDULABLE])
    update = status_after(observe(workflow("Succeeded"), [*done, stuck]), {"phase": "Running"}, T1)
    assert update.status["phase"] == "Succeeded" and "stuckReplicas" not in update.status
