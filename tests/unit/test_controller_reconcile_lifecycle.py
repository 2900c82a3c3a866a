"""The reconciler's lifecycle wiring, with in-memory stores: TTL deletion, timed wake-ups, success policy
cleanup, suspend and resume, failurePolicy DropReplica."""

from __future__ import annotations

from typing import Any, cast

import pytest

from dihera.controller.metrics import Metrics
from dihera.membership import Membership
from dihera.scaling import ScaleRequest
from tests.builders import pod_node
from tests.unit.controller_doubles import LIVE, NAME, NS, Cluster, LifecycleCluster, pod, workflow
from tests.unit.controller_doubles import reconciler as make_reconciler

T0, T1 = "2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z"


def reconcile(cluster: Cluster, now: str = T1) -> float | None:
    store = cast(Any, cluster)
    return make_reconciler(store, Metrics(), clock=lambda: now).reconcile(NS, NAME)


def finished(cluster: LifecycleCluster, phase: str = "Succeeded", at: str = T0) -> LifecycleCluster:
    cluster.body["status"].update(phase=phase, completionTimestamp=at)
    return cluster


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_a_finished_job_past_its_ttl_is_deleted_by_uid(phase: str) -> None:
    cluster = finished(LifecycleCluster(ttlSecondsAfterFinished=60), phase)
    assert reconcile(cluster) is None
    assert cluster.deleted == [(NS, NAME, "job-uid")]


def test_a_finished_job_before_its_ttl_asks_to_be_woken_then() -> None:
    cluster = finished(LifecycleCluster(ttlSecondsAfterFinished=90))
    assert reconcile(cluster) == 30.0
    assert cluster.deleted == []


def test_a_finished_job_without_ttl_is_kept() -> None:
    cluster = finished(LifecycleCluster())
    assert reconcile(cluster) is None and cluster.deleted == []


def test_a_running_job_with_a_ttl_is_not_deleted() -> None:
    cluster = LifecycleCluster(ttlSecondsAfterFinished=0)
    reconcile(cluster)
    assert cluster.deleted == []


def test_a_running_job_asks_to_be_woken_at_its_deadline() -> None:
    cluster = LifecycleCluster(activeDeadlineSeconds=90)
    cluster.body["status"]["startTime"] = T0
    assert reconcile(cluster) == 30.0
    assert cluster.statuses[-1]["phase"] == "Running"


def test_past_its_deadline_the_job_fails_and_its_pods_are_stopped() -> None:
    cluster = LifecycleCluster(activeDeadlineSeconds=30)
    cluster.body["status"]["startTime"] = T0
    assert reconcile(cluster) is None
    assert cluster.statuses[-1]["phase"] == "Failed"
    assert ("DeadlineExceeded" in [r for r, _ in cluster.events]) and cluster.stopped == [NAME]
    assert sorted(cluster.pods_deleted) == sorted(f"{NAME}-{r.task}-{r.index}" for r in LIVE.replicas)
    # each under its uid: a pod created again under the name meanwhile is not the one decided on
    assert cluster.pod_uids == {f"{NAME}-{r.task}-{r.index}": f"uid-{r.task}-{r.index}" for r in LIVE.replicas}


def test_the_ending_is_written_before_any_replica_is_stopped() -> None:
    """Stopping the Workflow makes Argo fail it; the job's Succeeded (or DeadlineExceeded) is recorded first."""
    cluster = LifecycleCluster(activeDeadlineSeconds=30)
    cluster.body["status"]["startTime"] = T0
    reconcile(cluster)
    assert cluster.order[0] == "status Failed" and cluster.order[1] == "shutdown Workflow"
    assert set(cluster.order[2:]) == {"delete pod"}


# -- spec.suspend -------------------------------------------------------------------------------------------------


def test_suspending_a_running_job_writes_suspended_then_deletes_its_workflow_only() -> None:
    cluster = LifecycleCluster(suspend=True)
    reconcile(cluster)
    assert cluster.order == ["status Suspended", f"delete Workflow {NAME} wf-uid"]
    assert cluster.configmap is not None and cluster.pods_deleted == [] and cluster.stopped == []
    assert [r for r, _ in cluster.events] == ["JobSuspended"]
    reconcile(cluster)  # the Workflow is gone: nothing more to do, still Suspended
    assert cluster.order[2:] == ["status Suspended"]  # only the message: "every replica is stopped"
    assert "every replica is stopped" in cluster.body["status"]["conditions"][-1]["message"]


def test_resuming_creates_the_workflow_again_from_the_membership_with_the_same_ranks() -> None:
    cluster = LifecycleCluster(suspend=False)
    cluster.body["status"].update(phase="Suspended")
    cluster.workflow = None  # type: ignore[assignment]
    cluster.body["spec"]["tasks"][1]["replicas"] = 2  # the spec agrees with the membership
    reconcile(cluster)
    assert cluster.created_workflow is not None
    dag = next(t for t in cluster.created_workflow["spec"]["templates"] if t["name"] == "dijob")["dag"]["tasks"]
    ranks = {t["name"]: t["arguments"]["parameters"][1]["value"] for t in dag}
    assert ranks == {"learner-0": "0", "collector-0": "1", "collector-1": "2"}
    assert cluster.statuses[-1]["phase"] == "Pending" and cluster.statuses[-1]["startTime"] == T1
    assert cluster.scale_calls == []


def test_a_replica_count_edited_while_suspended_is_applied_after_the_resume() -> None:
    cluster = LifecycleCluster(suspend=False)
    cluster.body["status"].update(phase="Suspended", observedGeneration=1)
    cluster.workflow = None  # type: ignore[assignment]
    cluster.body["spec"]["tasks"][1]["replicas"] = 3  # edited while suspended (and observed then)
    reconcile(cluster)
    dag = next(t for t in cluster.created_workflow["spec"]["templates"] if t["name"] == "dijob")["dag"]["tasks"]
    assert len(dag) == 3  # the run resumed is the one suspended ...
    assert cluster.scale_calls == [(NS, NAME, ScaleRequest.sync(), False)]  # ... then the edit is applied


# -- failurePolicy DropReplica ------------------------------------------------------------------------------------


def test_a_dropped_replica_is_recorded_then_scaled_down_by_name() -> None:
    cluster = LifecycleCluster(backoffLimit=0)
    cluster.body["spec"]["tasks"][1]["failurePolicy"] = "DropReplica"
    cluster.body["spec"]["tasks"][1]["replicas"] = 2
    failed = pod(LIVE.replicas[2])
    failed["status"] = {
        "phase": "Failed",
        "containerStatuses": [{"name": "main", "state": {"terminated": {"exitCode": 1}}}],
    }
    cluster.list_pods = lambda namespace, selector: [pod(r) for r in LIVE.replicas[:2]] + [failed]  # type: ignore[method-assign]
    cluster.scale_result = (Membership(2, LIVE.replicas[:2]), workflow(2, Membership(2, LIVE.replicas[:2])))
    reconcile(cluster)
    assert cluster.order[0] == "status Running"
    assert cluster.scale_calls == [(NS, NAME, ScaleRequest.remove_named(["collector-1"]), True)]
    assert cluster.statuses[0]["droppedReplicas"][0]["replica"] == "collector-1"
    assert "ReplicaDropped" in [r for r, _ in cluster.events]


def test_a_finished_job_gains_the_artifacts_its_replicas_stored_after_its_end_once() -> None:
    """Argo records a node's outputs once its wait container stored them, after the user's containers ended:
    the job may be Succeeded by then. Its status gains status.artifacts, and nothing else changes."""
    cluster = finished(LifecycleCluster(artifacts=[{"name": "policy", "path": "/w/final.pth.tar"}]))
    before = dict(cluster.body["status"])
    stored = {"artifacts": [{"name": "policy", "s3": {"key": "ns/j/p/policy.tgz"}}]}
    cluster.workflow["status"]["nodes"] = {"n1": pod_node(f"{NAME}.learner-0(0)", "Succeeded", id="n1", outputs=stored)}
    reconcile(cluster)
    entry = {"name": "policy", "replica": "learner-0", "node": "n1", "key": "ns/j/p/policy.tgz"}
    assert cluster.body["status"] == {**before, "artifacts": [entry]}
    reconcile(cluster)
    assert [o for o in cluster.order if o.startswith("status")] == ["status Succeeded"]  # written once
