"""The controller's reconciler over test doubles: one fake store plays the API server (DIJobs and the job's
objects), the Event recorder and the scaler.

:class:`Cluster` is that store for job ``ns/j`` (a learner and collectors; membership LIVE: learner-0,
collector-0, collector-1, or GROWN: collector-2 added), its DIJob, Workflow and pods built with
tests/builders; :class:`LifecycleCluster` records the lifecycle's writes too. Shared by the
test_controller_reconcile*.py modules.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import jsonpatch  # type: ignore[import-untyped]

from dihera.controller.apply import Applier
from dihera.controller.metrics import Metrics
from dihera.controller.reconcile import Reconciler
from dihera.errors import ScaleError
from dihera.kube.jobs import StatusConflict
from dihera.membership import Membership, Replica
from dihera.render import RenderSettings
from dihera.render.objects import membership_configmap, service
from dihera.scaling import ScaleRequest
from dihera.validation import load_job
from tests.builders import DIJobBuilder, PodBuilder, WorkflowBuilder, task

__all__ = ["GROWN", "LIVE", "NAME", "NS", "T1", "Cluster", "LifecycleCluster", "dijob", "pod", "reconciler", "workflow"]

NS, NAME, T1 = "ns", "j", "2026-01-01T00:01:00Z"
LIVE = Membership(1, (Replica(0, "learner", 0), Replica(1, "collector", 0), Replica(2, "collector", 1)))
GROWN = Membership(2, (*LIVE.replicas, Replica(3, "collector", 2)))


def dijob(collectors: int, generation: int, observed: int, stamp: int | None = None) -> dict[str, Any]:
    """The DIJob, Running, with ``collectors`` in its spec at ``generation``, its status at ``observed``;
    ``stamp``: the membership generation its spec was written with (the annotation, absent when None)."""
    body = DIJobBuilder(NAME).namespace(NS).uid("job-uid").generation(generation).version("1")
    body.task(task("learner", replicas=1), task("collector", replicas=collectors))
    if stamp is not None:
        body.membership_generation(stamp)
    return body.status(phase="Running", observedGeneration=observed, membershipGeneration=1, workflowName=NAME).obj()


def workflow(converged: int, membership: Membership) -> dict[str, Any]:
    """The job's Workflow (owned by the DIJob), converged to generation ``converged`` of ``membership``."""
    built = WorkflowBuilder(NAME).uid("wf-uid").owner("job-uid").membership_generation(converged).dag(membership)
    return built.phase("Running").nodes({}).obj()


def pod(r: Replica) -> dict[str, Any]:
    """Replica ``r``'s pod (owned by the Workflow), Running and ready."""
    built = (
        PodBuilder(f"{NAME}-{r.task}-{r.index}")
        .uid(f"uid-{r.task}-{r.index}")
        .replica(NAME, r.task, r.index)
        .owner("wf-uid", kind="Workflow", name=NAME)
    )
    return built.phase("Running").ready().obj()


class Cluster:
    """The job's objects in memory; the stores, the event recorder and the scaler all act on it."""

    def __init__(self, body: dict[str, Any], membership: Membership, converged: int) -> None:
        self.body = body
        self.configmap = self.membership_configmap(membership)
        self.service = service(load_job(body))
        self.workflow = workflow(converged, membership)
        self.statuses: list[dict[str, Any]] = []
        self.events: list[tuple[str, str]] = []
        self.scale_calls: list[tuple[str, str, ScaleRequest, bool]] = []
        self.scale_error: ScaleError | None = None
        self.scale_result = (GROWN, workflow(2, GROWN))
        self.conflicts = 0
        self.live_pods = [pod(r) for r in LIVE.replicas]
        self.deleted: list[str] = []

    # JobStore
    def get(self, namespace: str, name: str) -> dict[str, Any]:
        return copy.deepcopy(self.body)

    def patch_status(self, namespace: str, name: str, ops: list[dict[str, Any]]) -> dict[str, Any]:
        if self.conflicts:
            self.conflicts -= 1
            raise StatusConflict(f"{namespace}/{name} moved")
        self.body = jsonpatch.apply_patch(self.body, ops)
        self.body["metadata"]["resourceVersion"] = str(int(self.body["metadata"]["resourceVersion"]) + 1)
        self.statuses.append(self.body["status"])
        return copy.deepcopy(self.body)

    # ObjectStore
    def get_configmap(self, namespace: str, name: str) -> dict[str, Any]:
        return copy.deepcopy(self.configmap)

    def get_workflow(self, namespace: str, name: str) -> dict[str, Any]:
        return copy.deepcopy(self.workflow)

    def list_pods(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        return copy.deepcopy(self.live_pods)

    def get_service(self, namespace: str, name: str) -> dict[str, Any] | None:
        return copy.deepcopy(self.service)

    def list_workflows(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        return [copy.deepcopy(self.workflow)] if self.workflow is not None else []

    def membership_configmap(self, membership: Membership) -> dict[str, Any]:
        """The membership ConfigMap as the controller renders it for the job's spec."""
        return membership_configmap(load_job(self.body), membership, RenderSettings())

    def delete_pods(self, namespace: str, names: list[str], uids: Any = None) -> None:
        self.deleted += names

    # EventRecorder
    def post(self, job: Any, type_: str, reason: str, message: str) -> bool:
        self.events.append((reason, message))
        return True

    # JobScaler: commits GROWN (scale_result) and converges the Workflow to it
    def scale(self, namespace: str, name: str, request: ScaleRequest, *, update_spec: bool = True) -> Any:
        self.scale_calls.append((namespace, name, request, update_spec))
        if self.scale_error is not None:
            raise self.scale_error
        before = self.configmap
        membership, self.workflow = self.scale_result
        self.configmap = self.membership_configmap(membership)
        return type("Result", (), {"changed": before != self.configmap, "deleted_pods": ()})()


class LifecycleCluster(Cluster):
    """A running job of 2 collectors (``spec`` added to its spec) that records the lifecycle's writes in order."""

    def __init__(self, **spec: Any) -> None:
        body = dijob(2, 1, 1)
        body["spec"].update(spec)
        super().__init__(body, LIVE, 1)
        self.deleted: list[tuple[str, str, str | None]] = []
        self.stopped: list[str] = []
        self.pods_deleted: list[str] = []
        self.pod_uids: dict[str, str] = {}
        self.order: list[str] = []
        self.pods_of = LIVE.replicas
        self.created_workflow: dict[str, Any] | None = None

    def patch_status(self, namespace: str, name: str, ops: list[dict[str, Any]]) -> dict[str, Any]:
        written = super().patch_status(namespace, name, ops)
        self.order.append(f"status {self.body['status']['phase']}")
        return written

    def delete(self, namespace: str, name: str, uid: str | None = None) -> bool:
        self.deleted.append((namespace, name, uid))
        return True

    def shutdown_workflow(self, namespace: str, name: str) -> None:
        self.stopped.append(name)
        self.order.append("shutdown Workflow")

    def delete_pods(self, namespace: str, names: Sequence[str], uids: Any = None) -> None:
        self.pods_deleted += names
        self.pod_uids.update(uids or {})
        self.order += ["delete pod"] * len(names)

    def delete_workflow(self, namespace: str, name: str, uid: str | None = None) -> bool:
        self.order.append(f"delete Workflow {name} {uid}")
        self.workflow = None  # type: ignore[assignment]
        return True

    def create(self, obj: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        self.order.append(f"create {obj['kind']}")
        if obj["kind"] == "Workflow":
            self.created_workflow = obj
            self.workflow = {**obj, "metadata": {**obj["metadata"], "uid": "wf-2"}, "status": {}}
            return self.workflow, True
        return obj, obj["kind"] != "ConfigMap"

    def list_pods(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        return [] if self.workflow is None else [pod(r) for r in self.pods_of]


def reconciler(store: Any, metrics: Metrics | None = None, **kw: Any) -> Reconciler:
    """A :class:`Reconciler` whose reads and writes all go to ``store`` (``kw``: the Reconciler's own:
    ``clock``, ``cache``, ``queueing``, ``progress_batch``...)."""
    metrics = metrics or Metrics()
    applier = Applier(store, store, store, store, metrics, RenderSettings(), cache=kw.get("cache"))
    return Reconciler(applier, metrics, **kw)
