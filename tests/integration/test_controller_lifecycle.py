"""The job lifecycle on the real control plane: successPolicy, failurePolicy DropReplica,
activeDeadlineSeconds, ttlSecondsAfterFinished, suspend/resume and why a replica is stuck.

Simulated (kwok) nodes are enough: pods run for ``sim.dihera.io/run-seconds`` and exit 0 (or fail as
the other ``sim.dihera.io/*`` annotations of ci/kwok/pods.yaml say), the real kube-scheduler reports a
pod no node fits as Unschedulable. Each test prints the figures it measured.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from kubernetes import client

from dihera.controller.decide.deadline import parse_time
from dihera.kube.jobs import JobStore
from dihera.kube.objects import ObjectStore
from dihera.naming import membership_configmap_name, service_name
from tests.integration.conftest import Poll
from tests.integration.controllers import Controller
from tests.integration.jobs import dijob_events, job_pods, manifest, phase_is, task
from tests.integration.lifecycle import (
    FOREVER,
    StatusLog,
    current_message,
    has_event,
    has_event_reasons,
    live_pods,
    set_suspend,
    status_where,
)

pytestmark = pytest.mark.cluster


def test_success_policy_any_on_the_learner_stops_the_collectors(
    controller: Controller,
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
    reasons = poll(has_event_reasons(cluster, namespace, "rl", "JobSucceeded"), 30, "JobSucceeded Event")
    assert "ReplicaRestarted" not in reasons and "JobFailed" not in reasons


def test_active_deadline_fails_the_job_and_stops_its_pods(
    controller: Controller,
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
    controller: Controller,
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
    controller: Controller,
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
    controller: Controller,
    cluster: client.ApiClient,
    namespace: str,
    poll: Poll,
) -> None:
    jobs = JobStore(cluster)
    picky = task("learner", **FOREVER)
    picky["template"]["spec"]["nodeSelector"] = {"dihera.io/no-such-node": "true"}
    jobs.create(manifest("picky", namespace, picky, task("collector", **FOREVER)))
    created = time.monotonic()
    status = poll(status_where(jobs, namespace, "picky", lambda s: s.get("stuckReplicas")), 60, "stuckReplicas")
    print(f"Unschedulable in status {time.monotonic() - created:.1f} s after the DIJob was created")
    (entry,) = status["stuckReplicas"]
    assert entry["replica"] == "learner-0" and entry["reason"] == "Unschedulable"
    assert "node affinity/selector" in entry["message"] or "nodeSelector" in entry["message"], entry
    assert status["phase"] in ("Starting", "Pending")
    message = status["conditions"][-1]["message"]
    assert "replica learner-0" in message and "is Unschedulable" in message, message
    poll(has_event(cluster, namespace, "picky", "ReplicaStuck", "learner-0", "Unschedulable"), 30, "ReplicaStuck")


WAITING = {
    "ImagePullBackOff": "simulated: Back-off pulling image",
    "ErrImagePull": "simulated: rpc error: pull access denied",
    "CrashLoopBackOff": "simulated: back-off 10s restarting failed container=main",
}


@pytest.mark.parametrize("reason", WAITING)
def test_a_container_that_cannot_start_says_why_in_status(
    reason: str,
    controller: Controller,
    cluster: client.ApiClient,
    namespace: str,
    poll: Poll,
) -> None:
    """kwok plays the kubelet: the Stage ``pod-stuck`` (ci/kwok/pods.yaml) leaves the containers waiting."""
    jobs = JobStore(cluster)
    said = {} if reason == "ImagePullBackOff" else {"sim.dihera.io/waiting-message": WAITING[reason]}
    waiting = task("collector", **{"sim.dihera.io/waiting-reason": reason, **said})
    jobs.create(manifest("nostart", namespace, task("learner", **FOREVER), waiting))
    created = time.monotonic()
    status = poll(status_where(jobs, namespace, "nostart", lambda s: s.get("stuckReplicas")), 60, "stuckReplicas")
    print(f"{reason} in status {time.monotonic() - created:.1f} s after the DIJob was created")
    (entry,) = status["stuckReplicas"]
    assert (entry["replica"], entry["reason"]) == ("collector-0", reason), entry
    assert entry["message"].startswith(f"container main: {WAITING[reason]}"), entry
    assert f"replica collector-0 (pod {entry['pod']}) is {reason}" in status["conditions"][-1]["message"]
    assert status["phase"] == "Starting"
    poll(has_event(cluster, namespace, "nostart", "ReplicaStuck", "collector-0", reason), 30, "a ReplicaStuck event")


def test_an_oom_killed_replica_says_so_before_the_job_fails(
    controller: Controller,
    cluster: client.ApiClient,
    namespace: str,
    poll: Poll,
) -> None:
    """kwok's ``pod-fail`` Stage reports the first attempt OOMKilled (exit code 137); it has retries left."""
    jobs = JobStore(cluster)
    hog = task(
        "collector",
        **{
            "sim.dihera.io/fail-attempts": "1",
            "sim.dihera.io/exit-code": "137",
            "sim.dihera.io/terminated-reason": "OOMKilled",
            "sim.dihera.io/run-seconds": "3",
        },
    )
    hog["template"]["spec"]["containers"][0]["resources"] = {"limits": {"memory": "48Mi"}}
    with StatusLog(cluster, namespace, "hog").watching() as log:
        jobs.create(manifest("hog", namespace, task("learner", **FOREVER), hog, backoffLimit=3))
        created = time.monotonic()
        poll(has_event(cluster, namespace, "hog", "ReplicaStuck", "collector-0", "OOMKilled"), 60, "ReplicaStuck")
        print(f"OOMKilled Event {time.monotonic() - created:.1f} s after the DIJob was created")
        poll(status_where(jobs, namespace, "hog", lambda s: s.get("restarts") == 1), 60, "the collector restarted")
    seen = log.find(lambda s: any(e["reason"] == "OOMKilled" for e in s.get("stuckReplicas") or []))
    assert seen is not None, [s.get("phase") for s in log.statuses]
    (entry,) = seen["stuckReplicas"]
    assert entry["replica"] == "collector-0" and "memory limit 48Mi" in entry["message"], entry
    assert seen["phase"] == "Restarting", seen
    assert "replica collector-0" in current_message(seen) and "is OOMKilled" in current_message(seen), seen
    assert not log.find(lambda s: s.get("phase") == "Failed")


# -- failurePolicy DropReplica ------------------------------------------------------------------------------------


def dropped(status: dict[str, Any]) -> list[str]:
    return [e["replica"] for e in status.get("droppedReplicas") or []]


def test_drop_replica_keeps_the_job_running_then_fails_it_at_the_bound(
    controller: Controller,
    cluster: client.ApiClient,
    namespace: str,
    poll: Poll,
) -> None:
    """collector-1 fails every attempt after 3 s, collector-2 after 15 s; minReplicas 3 of 4 allows one drop."""
    jobs, objects = JobStore(cluster), ObjectStore(cluster)
    collectors = task("collector", 3, **FOREVER, **{"sim.dihera.io/fail-replicas": "1=3,2=15"})
    collectors["failurePolicy"] = "DropReplica"
    jobs.create(manifest("shrink", namespace, task("learner", **FOREVER), collectors, backoffLimit=1, minReplicas=3))
    created = time.monotonic()
    status = poll(
        status_where(
            jobs,
            namespace,
            "shrink",
            lambda s: dropped(s) == ["collector-1"] and s["phase"] == "Running" and s["membershipGeneration"] == 2,
        ),
        120,
        "Running without collector-1 (membership generation 2)",
    )
    print(f"collector-1 dropped, job Running with 3 replicas {time.monotonic() - created:.1f} s after creation")
    assert status["replicas"] == 3, status
    (entry,) = status["droppedReplicas"]
    assert (entry["rank"], entry["restarts"]) == (2, 1) and "exit code 1" in entry["message"], entry
    assert "1 replica(s) dropped by failurePolicy DropReplica: collector-1 (rank 2)" in current_message(status)
    configmap = objects.get_configmap(namespace, membership_configmap_name("shrink"))
    assert configmap is not None
    nodes = configmap["data"]["DI_COLLECTOR_NODES"]
    assert "shrink-collector-1." not in nodes and "shrink-collector-0." in nodes and "shrink-collector-2." in nodes
    assert configmap["data"]["DI_MEMBERSHIP_GENERATION"] == "2"
    wf = objects.get_workflow(namespace, "shrink")
    assert wf is not None and wf["status"]["phase"] == "Running"  # continueOn: the DAG did not fail
    dag = next(t for t in wf["spec"]["templates"] if t["name"] == "dijob")["dag"]["tasks"]
    assert next(t for t in dag if t["name"] == "collector-1")["template"] == "dihera-retired"
    spec = (jobs.get(namespace, "shrink") or {})["spec"]
    assert next(t for t in spec["tasks"] if t["type"] == "collector")["replicas"] == 2
    dropped_event = has_event(cluster, namespace, "shrink", "ReplicaDropped", "collector-1", "3 replicas left")
    poll(dropped_event, 30, "a ReplicaDropped event")
    poll(has_event(cluster, namespace, "shrink", "ReplicasChanged", "generation 2"), 30, "ReplicasChanged")

    status = poll(phase_is(jobs, namespace, "shrink", "Failed"), 120, "Failed when collector-2 cannot be dropped")
    print(f"job Failed at the bound {time.monotonic() - created:.1f} s after creation")
    message = current_message(status)
    assert "replica collector-2" in message and "below minReplicas 3" in message, message
    assert dropped(status) == ["collector-1"], status
    poll(has_event(cluster, namespace, "shrink", "DropBoundReached", "minReplicas 3"), 30, "DropBoundReached")
    poll(lambda: not live_pods(cluster, namespace, "shrink"), 60, "the pods stopped (cleanPodPolicy Running)")


# -- suspend and resume -------------------------------------------------------------------------------------------


def replicas_seen(cluster: client.ApiClient, namespace: str, name: str) -> dict[str, tuple[str, str]]:
    """hostname → (rank, FQDN) of the job's live pods, as the pods themselves carry them."""
    out = {}
    for p in live_pods(cluster, namespace, name):
        spec, annotations = p["spec"], p["metadata"]["annotations"]
        fqdn = f"{spec['hostname']}.{spec['subdomain']}.{namespace}.svc.cluster.local"
        out[spec["hostname"]] = (annotations["diengine/rank"], fqdn)
    return out


def test_a_job_suspended_before_it_starts_creates_nothing_until_resumed(
    controller: Controller,
    cluster: client.ApiClient,
    namespace: str,
    poll: Poll,
) -> None:
    jobs, objects = JobStore(cluster), ObjectStore(cluster)
    jobs.create(manifest("later", namespace, task("learner", **FOREVER), suspend=True))
    status = poll(phase_is(jobs, namespace, "later", "Suspended"), 60, "later Suspended")
    assert "nothing is created" in current_message(status)
    time.sleep(3)  # nothing appears meanwhile
    assert objects.get_workflow(namespace, "later") is None
    assert objects.get_configmap(namespace, membership_configmap_name("later")) is None
    services = client.CoreV1Api(cluster).list_namespaced_service(namespace).items
    assert service_name("later") not in [s.metadata.name for s in services]
    assert not job_pods(cluster, namespace, "later")
    set_suspend(cluster, namespace, "later", False)
    resumed = time.monotonic()
    poll(phase_is(jobs, namespace, "later", "Running"), 90, "later Running once resumed")
    print(f"suspend false -> Running {time.monotonic() - resumed:.1f} s")
    assert objects.get_workflow(namespace, "later") is not None


def test_suspending_a_running_job_stops_every_pod_and_resume_keeps_ranks_and_fqdns(
    controller: Controller,
    cluster: client.ApiClient,
    namespace: str,
    poll: Poll,
) -> None:
    jobs, objects = JobStore(cluster), ObjectStore(cluster)
    jobs.create(manifest("nap", namespace, task("learner", **FOREVER), task("collector", 2, **FOREVER)))
    poll(phase_is(jobs, namespace, "nap", "Running"), 90, "nap Running")
    before = replicas_seen(cluster, namespace, "nap")
    first = objects.get_workflow(namespace, "nap")
    assert len(before) == 3 and first is not None
    set_suspend(cluster, namespace, "nap", True)
    asked = time.monotonic()
    status = poll(phase_is(jobs, namespace, "nap", "Suspended"), 60, "nap Suspended")
    poll(lambda: not job_pods(cluster, namespace, "nap"), 60, "every pod gone")
    print(f"suspend true -> Suspended and every pod gone {time.monotonic() - asked:.1f} s")
    assert objects.get_workflow(namespace, "nap") is None
    assert objects.get_configmap(namespace, membership_configmap_name("nap")) is not None  # kept for the resume
    client.CoreV1Api(cluster).read_namespaced_service(service_name("nap"), namespace)  # kept: no 404
    set_suspend(cluster, namespace, "nap", False)
    resumed = time.monotonic()
    status = poll(phase_is(jobs, namespace, "nap", "Running"), 90, "nap Running again")
    print(f"suspend false -> Running again {time.monotonic() - resumed:.1f} s")
    assert replicas_seen(cluster, namespace, "nap") == before  # same hostnames, ranks and FQDNs
    second = objects.get_workflow(namespace, "nap")
    assert second is not None and second["metadata"]["uid"] != first["metadata"]["uid"]
    assert status["restarts"] == 0 and status["membershipGeneration"] == 1, status
    assert next(c for c in status["conditions"] if c["type"] == "Suspended")["status"] == "False"
    reasons = poll(has_event_reasons(cluster, namespace, "nap", "JobSuspended"), 30, "JobSuspended Event")
    assert "ReplicaRestarted" not in reasons and "JobFailed" not in reasons
