"""successPolicy, activeDeadlineSeconds, ttlSecondsAfterFinished and stuck replicas on the real control plane.

Simulated (kwok) nodes are enough: pods run for ``sim.dihera.io/run-seconds`` and exit 0, the real
kube-scheduler reports a pod no node fits as Unschedulable. Each test prints the figures it measured.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from kubernetes import client

from dihera.controller.deadlines import parse_time
from dihera.kube.jobs import JobStore
from dihera.kube.objects import ObjectStore
from tests.integration.test_controller_jobs import (  # noqa: F401  (fixtures)
    Controller,
    Poll,
    controller,
    controller_kubeconfig,
    dijob_events,
    job_pods,
    manifest,
    phase_is,
    task,
)

pytestmark = pytest.mark.cluster
FOREVER = {"sim.dihera.io/run-seconds": "3600"}


def live_pods(cluster: client.ApiClient, namespace: str, name: str) -> list[dict[str, Any]]:
    return [
        p
        for p in job_pods(cluster, namespace, name)
        if p["status"].get("phase") in ("Pending", "Running") and not p["metadata"].get("deletionTimestamp")
    ]


def test_success_policy_any_on_the_learner_stops_the_collectors(
    controller: Controller,  # noqa: F811
    cluster: client.ApiClient,
    namespace: str,
    poll: Poll,
) -> None:
    jobs = JobStore(cluster)
    learner = task("learner", **{"sim.dihera.io/run-seconds": "4"})
    collectors = task("collector", 2, **FOREVER)
    policy = {"operator": "Any", "targetTasks": ["learner"]}
    jobs.create(manifest("rl", namespace, learner, collectors, successPolicy=policy, backoffLimit=3))
    poll(phase_is(jobs, namespace, "rl", "Running"), 90, "rl Running")
    status = poll(phase_is(jobs, namespace, "rl", "Succeeded"), 60, "rl Succeeded while collectors run")
    (learner_pod,) = [p for p in job_pods(cluster, namespace, "rl") if "learner" in p["metadata"]["name"]]
    assert learner_pod["status"]["phase"] == "Succeeded"
    (main,) = [c for c in learner_pod["status"]["containerStatuses"] if c["name"] == "main"]
    exited = parse_time(main["state"]["terminated"]["finishedAt"])
    lag = (parse_time(status["completionTimestamp"]) - exited).total_seconds()
    print(f"learner exited 0 -> job Succeeded (completionTimestamp): {lag:.0f} s (1 s resolution)")
    message = status["conditions"][-1]["message"]
    assert "replica learner-0 of learner succeeded (successPolicy Any)" in message, message
    assert status["restarts"] == 0 and status["completionTimestamp"]
    poll(lambda: not live_pods(cluster, namespace, "rl"), 60, "the collectors stopped (cleanPodPolicy Running)")
    wf = ObjectStore(cluster).get_workflow(namespace, "rl")
    assert wf is not None and wf["spec"].get("shutdown") == "Terminate"  # Argo does not bring them back
    time.sleep(5)  # give Argo's retryStrategy every chance to replace the deleted collectors
    assert not live_pods(cluster, namespace, "rl"), "a stopped collector came back"
    after = jobs.get(namespace, "rl")
    assert after is not None and after["status"]["phase"] == "Succeeded" and after["status"]["restarts"] == 0
    reasons = [r for r, _ in dijob_events(cluster, namespace, "rl")]
    assert "JobSucceeded" in reasons and "ReplicaRestarted" not in reasons and "JobFailed" not in reasons


def test_active_deadline_fails_the_job_and_stops_its_pods(
    controller: Controller,  # noqa: F811
    cluster: client.ApiClient,
    namespace: str,
    poll: Poll,
) -> None:
    jobs = JobStore(cluster)
    jobs.create(
        manifest("late", namespace, task("learner", **FOREVER), task("collector", **FOREVER), activeDeadlineSeconds=10)
    )
    created = time.monotonic()
    poll(phase_is(jobs, namespace, "late", "Running"), 60, "late Running")
    status = poll(phase_is(jobs, namespace, "late", "Failed"), 60, "late Failed by its deadline")
    print(f"job Failed {time.monotonic() - created:.1f} s after it was created (activeDeadlineSeconds 10)")
    assert "activeDeadlineSeconds 10" in status["conditions"][-1]["message"]
    assert status["startTime"] <= status["completionTimestamp"]
    poll(lambda: not live_pods(cluster, namespace, "late"), 60, "the pods stopped")
    poll(
        lambda: "DeadlineExceeded" in [r for r, _ in dijob_events(cluster, namespace, "late")],
        30,
        "a DeadlineExceeded event",
    )


def test_ttl_after_finished_deletes_the_job_and_what_it_owns(
    controller: Controller,  # noqa: F811
    cluster: client.ApiClient,
    namespace: str,
    poll: Poll,
) -> None:
    jobs, objects = JobStore(cluster), ObjectStore(cluster)
    jobs.create(manifest("brief", namespace, task("learner"), ttlSecondsAfterFinished=3))
    status = poll(phase_is(jobs, namespace, "brief", "Succeeded"), 90, "brief Succeeded")
    assert objects.get_workflow(namespace, "brief") is not None  # still there right after it finished
    finished = time.monotonic()
    poll(lambda: jobs.get(namespace, "brief") is None, 60, "the DIJob deleted by its ttlSecondsAfterFinished")
    print(f"DIJob gone {time.monotonic() - finished:.1f} s after Succeeded was seen (ttlSecondsAfterFinished 3)")
    poll(
        lambda: objects.get_workflow(namespace, "brief") is None and not job_pods(cluster, namespace, "brief"),
        60,
        "its Workflow and pods gone",
    )
    assert status["completionTimestamp"]


def test_a_job_without_ttl_is_kept(
    controller: Controller,  # noqa: F811
    cluster: client.ApiClient,
    namespace: str,
    poll: Poll,
) -> None:
    jobs = JobStore(cluster)
    jobs.create(manifest("kept", namespace, task("learner")))
    poll(phase_is(jobs, namespace, "kept", "Succeeded"), 90, "kept Succeeded")
    time.sleep(5)
    assert jobs.get(namespace, "kept") is not None


def test_an_unschedulable_replica_says_why_in_status_and_an_event(
    controller: Controller,  # noqa: F811
    cluster: client.ApiClient,
    namespace: str,
    poll: Poll,
) -> None:
    jobs = JobStore(cluster)
    picky = task("learner", **FOREVER)
    picky["template"]["spec"]["nodeSelector"] = {"dihera.io/no-such-node": "true"}
    jobs.create(manifest("picky", namespace, picky, task("collector", **FOREVER)))
    created = time.monotonic()

    def stuck() -> dict[str, Any] | None:
        status = ((jobs.get(namespace, "picky") or {}).get("status")) or {}
        return status if status.get("stuckReplicas") else None

    status = poll(stuck, 60, "status.stuckReplicas")
    print(f"Unschedulable in status {time.monotonic() - created:.1f} s after the DIJob was created")
    (entry,) = status["stuckReplicas"]
    assert entry["replica"] == "learner-0" and entry["reason"] == "Unschedulable"
    assert "node affinity/selector" in entry["message"] or "nodeSelector" in entry["message"], entry
    assert status["phase"] in ("Starting", "Pending")
    message = status["conditions"][-1]["message"]
    assert "replica learner-0" in message and "is Unschedulable" in message, message
    poll(
        lambda: any(
            r == "ReplicaStuck" and "learner-0" in m and "Unschedulable" in m
            for r, m in dijob_events(cluster, namespace, "picky")
        ),
        30,
        "a ReplicaStuck event naming learner-0",
    )


def test_an_image_that_cannot_be_pulled_says_so_in_status(
    controller: Controller,  # noqa: F811
    cluster: client.ApiClient,
    namespace: str,
    poll: Poll,
) -> None:
    """kwok plays the kubelet that cannot pull: the Stage ``pod-stuck`` (ci/kwok/pods.yaml) leaves it waiting."""
    jobs = JobStore(cluster)
    unpullable = task("collector", **{"sim.dihera.io/waiting-reason": "ImagePullBackOff"})
    jobs.create(manifest("nopull", namespace, task("learner", **FOREVER), unpullable))
    created = time.monotonic()

    def stuck() -> dict[str, Any] | None:
        status = ((jobs.get(namespace, "nopull") or {}).get("status")) or {}
        return status if status.get("stuckReplicas") else None

    status = poll(stuck, 60, "status.stuckReplicas")
    print(f"ImagePullBackOff in status {time.monotonic() - created:.1f} s after the DIJob was created")
    (entry,) = status["stuckReplicas"]
    assert (entry["replica"], entry["reason"]) == ("collector-0", "ImagePullBackOff"), entry
    assert entry["message"].startswith("container main: simulated: Back-off pulling image"), entry
    assert "replica collector-0" in status["conditions"][-1]["message"]
    assert status["phase"] == "Starting"
    poll(
        lambda: any(
            r == "ReplicaStuck" and "ImagePullBackOff" in m for r, m in dijob_events(cluster, namespace, "nopull")
        ),
        30,
        "a ReplicaStuck event",
    )
