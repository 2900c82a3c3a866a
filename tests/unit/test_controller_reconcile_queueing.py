"""The reconciler's Kueue wiring, with in-memory stores: a queued job's Workload, no Workflow before admission,
the flavors' placement, eviction (stop, release, requeue), resume with the same ranks, Finished, unlabelled jobs."""

from __future__ import annotations

import copy
from typing import Any, cast

import jsonpatch

from dihera.controller.kueue import Queueing
from dihera.controller.metrics import Metrics
from dihera.kube.workloads import KueueObjectMissing
from dihera.queueing import KueueSettings
from tests.builders import PodBuilder, job, task
from tests.unit.controller_doubles import LIVE, NAME, NS, Cluster, LifecycleCluster, pod
from tests.unit.controller_doubles import reconciler as make_reconciler

T1 = "2026-01-01T00:01:00Z"
QUEUE = {"kueue.x-k8s.io/queue-name": "lq"}
ADMISSION = {
    "clusterQueue": "cq",
    "podSetAssignments": [
        {"name": "learner", "flavors": {"cpu": "gpu-nodes"}, "count": 1},
        {"name": "collector", "flavors": {"cpu": "default"}, "count": 2},
    ],
}
FLAVORS = {
    "gpu-nodes": {"spec": {"nodeLabels": {"pool": "gpu"}, "tolerations": [{"key": "gpu", "operator": "Exists"}]}},
    "default": {"spec": {}},
}


def cond(kind: str, status: str, reason: str = "", message: str = "") -> dict[str, Any]:
    return {"type": kind, "status": status, "reason": reason, "message": message, "lastTransitionTime": "T0"}


class Kueue:
    """The Workload API in memory (:class:`dihera.controller.kueue.WorkloadAPI`)."""

    def __init__(self, classes: dict[str, int] | None = None) -> None:
        self.workload: dict[str, Any] | None = None
        self.slices: list[dict[str, Any]] = []
        self.calls: list[str] = []
        self.classes = (
            {"dihera-nonpreemptible": 1000, "dihera-low": 100, "dihera-high": 300} if classes is None else classes
        )

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        self.calls.append(f"get {name}")
        return copy.deepcopy(self.workload)

    def create(self, workload: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        self.calls.append(f"create {workload['metadata']['name']}")
        self.workload = {**copy.deepcopy(workload), "status": {}}
        self.workload["metadata"].update(resourceVersion="1", generation=1)
        return copy.deepcopy(self.workload), True

    def patch_status(self, namespace: str, name: str, ops: Any) -> dict[str, Any] | None:
        self.calls.append(f"patch {name}/status")
        self.workload = jsonpatch.apply_patch(self.workload, ops)
        return copy.deepcopy(self.workload)

    def list(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        self.calls.append(f"list {selector}")
        return [copy.deepcopy(s) for s in self.slices]

    def delete(self, namespace: str, name: str) -> bool:
        self.calls.append(f"delete {name}")
        before = len(self.slices)
        self.slices = [s for s in self.slices if s["metadata"]["name"] != name]
        return len(self.slices) < before

    def patch(self, namespace: str, name: str, ops: Any) -> dict[str, Any] | None:
        self.calls.append(f"patch {name}")
        self.workload = jsonpatch.apply_patch(self.workload, ops)
        return copy.deepcopy(self.workload)

    def resource_flavor(self, name: str) -> dict[str, Any] | None:
        self.calls.append(f"get flavor {name}")
        return FLAVORS.get(name)

    def priority_value(self, name: str) -> int:
        if name not in self.classes:
            raise KueueObjectMissing(f"WorkloadPriorityClass {name!r} does not exist")
        return self.classes[name]

    def admit(self) -> None:
        assert self.workload is not None
        self.workload["status"] = {
            "conditions": [cond("QuotaReserved", "True", "QuotaReserved"), cond("Admitted", "True", "Admitted")],
            "admission": ADMISSION,
        }

    def evict(self) -> None:
        assert self.workload is not None
        self.workload["status"]["conditions"].append(
            cond("Evicted", "True", "Preempted", "Preempted to accommodate a workload (UID: u) due to prioritization")
        )

    def conditions(self) -> dict[str, dict[str, Any]]:
        assert self.workload is not None
        return {c["type"]: c for c in self.workload["status"].get("conditions") or []}


def reconcile(cluster: Cluster, kueue: Kueue) -> float | None:
    store = cast(Any, cluster)
    queueing = Queueing(KueueSettings(), kueue, Metrics(), lambda: T1)
    reconciler = make_reconciler(store, Metrics(), clock=lambda: T1, queueing=queueing)
    return reconciler.reconcile(NS, NAME)


class NewQueuedJob(LifecycleCluster):
    """A queued DIJob just created: no status, no objects."""

    def __init__(self, labels: dict[str, str] | None = None, **spec: Any) -> None:
        super().__init__()
        body = job(task("learner", replicas=1), task("collector", replicas=2), name=NAME, **spec)
        body["metadata"].update(namespace=NS, uid="job-uid", generation=1, resourceVersion="1")
        body["metadata"]["labels"] = QUEUE if labels is None else labels
        self.body = body
        self.configmap, self.workflow = None, None  # type: ignore[assignment]

    def get_configmap(self, namespace: str, name: str) -> Any:
        return copy.deepcopy(self.configmap)

    def create(self, obj: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        if obj["kind"] == "ConfigMap":
            self.configmap = obj
        return super().create(obj)


def test_a_queued_job_creates_its_workload_and_nothing_else_until_admitted() -> None:
    cluster, kueue = NewQueuedJob(), Kueue()
    reconcile(cluster, kueue)
    assert "create dijob-j" in kueue.calls
    assert kueue.workload is not None
    assert kueue.workload["spec"]["priorityClassRef"]["name"] == "dihera-nonpreemptible"  # preemptible: false
    assert kueue.workload["spec"]["priority"] == 1000
    assert not any(o.startswith("create") for o in cluster.order)  # no ConfigMap, Service or Workflow
    status = cluster.body["status"]
    assert (
        status["phase"] == "Queued"
        and "waiting for Kueue to admit Workload dijob-j in LocalQueue lq" in (status["conditions"][-1]["message"])
    )
    # Kueue says why it waits: the reason is in the status
    kueue.workload["status"] = {"conditions": [cond("QuotaReserved", "False", "Pending", "insufficient quota for cpu")]}
    reconcile(cluster, kueue)
    assert cluster.body["status"]["conditions"][-1]["message"].endswith("Pending: insufficient quota for cpu")
    assert cluster.created_workflow is None and kueue.calls.count("create dijob-j") == 1


def test_once_admitted_the_workflow_is_created_on_the_assigned_flavors_nodes() -> None:
    cluster, kueue = NewQueuedJob(), Kueue()
    reconcile(cluster, kueue)
    kueue.admit()
    reconcile(cluster, kueue)
    wf = cluster.created_workflow
    assert wf is not None and "kueue.x-k8s.io/queue-name" not in wf["metadata"]["labels"]
    templates = {t["name"]: t for t in wf["spec"]["templates"]}
    assert templates["learner"]["nodeSelector"] == {"pool": "gpu"}
    assert templates["learner"]["tolerations"] == [{"key": "gpu", "operator": "Exists"}]
    assert "nodeSelector" not in templates["collector"]
    assert cluster.body["status"]["phase"] != "Queued"
    assert [r for r, _ in cluster.events][:2] == ["JobPending", "JobQueued"]


def running_queued_job(kueue: Kueue, **spec: Any) -> LifecycleCluster:
    cluster = LifecycleCluster(**spec)
    cluster.body["metadata"]["labels"] = dict(QUEUE)
    kueue.create({"metadata": {"name": "dijob-j"}})
    kueue.admit()
    return cluster


def test_an_evicted_job_is_stopped_then_its_quota_released_then_resumed_with_the_same_ranks() -> None:
    kueue = Kueue()
    cluster = running_queued_job(kueue)
    reconcile(cluster, kueue)
    assert cluster.body["status"]["phase"] == "Running"
    kueue.evict()
    reconcile(cluster, kueue)
    # Queued is written first, then the Workflow deleted (its pods go with it); the ConfigMap stays
    assert cluster.order[-2:] == ["status Queued", f"delete Workflow {NAME} wf-uid"]
    assert cluster.configmap is not None
    message = cluster.body["status"]["conditions"][-1]["message"]
    assert message.startswith("evicted by Kueue (Preempted: Preempted to accommodate")
    assert ("Evicted", message) in cluster.events
    assert kueue.conditions()["QuotaReserved"]["status"] == "True"  # not released while its pods may still run
    reconcile(cluster, kueue)  # the Workflow and its pods are gone: the quota goes back to Kueue
    conds = kueue.conditions()
    assert conds["QuotaReserved"]["status"] == "False" and conds["Requeued"]["status"] == "True"
    assert "admission" not in kueue.workload["status"]  # type: ignore[index]
    assert cluster.body["status"]["phase"] == "Queued"
    kueue.admit()  # admitted again
    reconcile(cluster, kueue)
    wf = cluster.created_workflow
    assert wf is not None
    dag = next(t for t in wf["spec"]["templates"] if t["name"] == "dijob")["dag"]["tasks"]
    ranks = {t["name"]: t["arguments"]["parameters"][1]["value"] for t in dag}
    assert ranks == {"learner-0": "0", "collector-0": "1", "collector-1": "2"}
    assert cluster.body["status"]["phase"] == "Pending" and cluster.body["status"]["startTime"] == T1


def test_a_resume_waits_for_the_evicted_runs_pods() -> None:
    kueue = Kueue()
    cluster = running_queued_job(kueue)
    cluster.body["status"]["phase"] = "Queued"
    cluster.workflow = None  # type: ignore[assignment]
    cluster.list_pods = lambda namespace, selector: [pod(LIVE.replicas[0])]  # type: ignore[method-assign]
    reconcile(cluster, kueue)
    assert cluster.created_workflow is None
    assert "resuming once 1 pod(s) of the evicted run are gone" in cluster.body["status"]["conditions"][-1]["message"]


def test_a_pod_labelled_like_the_jobs_by_someone_else_does_not_hold_the_resume() -> None:
    """Only pods of a run of the job (owned by a Workflow of its name) are waited for: anyone may label a pod
    ``diengine/job: j``, and it must not keep the job Queued for ever."""
    kueue = Kueue()
    cluster = running_queued_job(kueue)
    cluster.body["status"]["phase"] = "Queued"
    cluster.workflow = None  # type: ignore[assignment]
    planted = PodBuilder("planted").replica(NAME, "learner", 0).phase("Running").obj()
    cluster.list_pods = lambda namespace, selector: [planted]  # type: ignore[method-assign]
    reconcile(cluster, kueue)
    assert cluster.created_workflow is not None


def test_a_finished_job_finishes_its_workload() -> None:
    kueue = Kueue()
    cluster = running_queued_job(kueue)
    cluster.body["status"].update(phase="Succeeded", completionTimestamp=T1)
    cluster.body["status"]["conditions"] = [cond("Succeeded", "True", "JobSucceeded", "all 3 replicas succeeded")]
    reconcile(cluster, kueue)
    finished = kueue.conditions()["Finished"]
    assert finished["status"] == "True" and finished["reason"] == "Succeeded"
    assert finished["message"] == "all 3 replicas succeeded"
    calls = len(kueue.calls)
    reconcile(cluster, kueue)
    assert kueue.calls[calls:] == ["get dijob-j"]  # already finished: nothing written


def test_a_missing_priority_class_is_said_and_tried_again() -> None:
    cluster, kueue = NewQueuedJob(), Kueue(classes={})
    assert reconcile(cluster, kueue) == 30.0
    message = cluster.body["status"]["conditions"][-1]["message"]
    assert cluster.body["status"]["phase"] == "Queued" and "'dihera-nonpreemptible' does not exist" in message
    assert kueue.workload is None and cluster.created_workflow is None


def test_spec_suspend_wins_over_the_queue() -> None:
    cluster, kueue = NewQueuedJob(suspend=True), Kueue()
    reconcile(cluster, kueue)
    assert cluster.body["status"]["phase"] == "Suspended" and kueue.calls == []


def test_an_unlabelled_job_never_touches_kueue() -> None:
    kueue = Kueue()
    cluster = LifecycleCluster()
    reconcile(cluster, kueue)
    assert cluster.body["status"]["phase"] == "Running" and kueue.calls == []
    new = NewQueuedJob(labels={})
    reconcile(new, kueue)
    assert new.created_workflow is not None and kueue.calls == []


def test_without_kueue_settings_the_label_is_ignored() -> None:
    cluster = NewQueuedJob()
    store = cast(Any, cluster)
    make_reconciler(store, Metrics(), clock=lambda: T1).reconcile(NS, NAME)
    assert cluster.created_workflow is not None
