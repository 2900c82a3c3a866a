"""The writes a pass makes after its status write for the failure and suspend policies.

Like cleanPodPolicy (:mod:`dihera.controller.cleanup`), each is decided by a pure module and done
only once the status recording it is written, so a pass that fails in between does it again next
time: the scale-down of replicas ``failurePolicy: DropReplica`` dropped
(:mod:`dihera.controller.failure_policy`), the deletion of a suspended job's Workflow
(:mod:`dihera.controller.suspend`), and of the pods a scale-down left to the controller
(:mod:`dihera.scaling.retired_pods`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from dihera.controller.metrics import Metrics
from dihera.errors import ScaleError
from dihera.kube.objects import ObjectStore
from dihera.model import DIJob
from dihera.scaling import ScaleRequest, retired_pods

__all__ = ["Scaler", "delete_retired_pods", "delete_workflow", "drop_replicas"]

log = logging.getLogger("dihera.controller")


class Scaler(Protocol):
    """What the reconciler needs of :class:`dihera.kube.scale_executor.JobScaler`."""

    def scale(self, namespace: str, name: str, request: ScaleRequest, *, update_spec: bool = True) -> Any: ...


def drop_replicas(
    scaler: Scaler, metrics: Metrics, job: DIJob, names: tuple[str, ...], extra: Mapping[str, str]
) -> None:
    """Remove the replicas failurePolicy DropReplica dropped, exactly as a scale-down naming them would.

    A retryable error is raised (the queue retries; the status already records the drop, so the
    next pass drops the same replicas); a permanent one is logged (the next pass decides again).
    """
    if not names:
        return
    try:
        result = scaler.scale(job.namespace, job.name, ScaleRequest.remove_named(names))
    except ScaleError as err:
        if err.retryable:
            raise
        log.warning("failurePolicy DropReplica: removing %s refused: %s", ", ".join(names), err, extra=extra)
        return
    if result.changed:
        metrics.wrote("update", "ConfigMap")
        metrics.wrote("patch", "Workflow")
        metrics.wrote("patch", "DIJob")
    metrics.wrote("delete", "Pod", len(result.deleted_pods))
    log.info("failurePolicy DropReplica: removed %s from the job", ", ".join(names), extra=extra)


def delete_workflow(
    objects: ObjectStore, metrics: Metrics, job: DIJob, workflow: Mapping[str, Any], extra: Mapping[str, str]
) -> None:
    """spec.suspend on a running job: delete its Workflow (its pods go with it); ConfigMap and Service stay."""
    meta = workflow["metadata"]
    if objects.delete_workflow(job.namespace, meta["name"], uid=meta.get("uid")):
        metrics.wrote("delete", "Workflow")
        log.info("spec.suspend: deleted the Workflow %s; its pods go with it", meta["name"], extra=extra)


def delete_retired_pods(
    objects: ObjectStore,
    metrics: Metrics,
    job: DIJob,
    workflow: Mapping[str, Any],
    pods: Sequence[Mapping[str, Any]],
    extra: Mapping[str, str],
    live_pods: Callable[[], Sequence[Mapping[str, Any]]] | None = None,
) -> None:
    """Delete the live pods of retired replicas whose tombstone Argo has finished (the scaler's leftovers).

    A scale-down deletes them itself once Argo acts on its Workflow patch, waiting a bounded time; a pod
    still waiting then (Argo slower still, or a scaler that stopped) is deleted here, when the Workflow's
    watch event shows Argo finished the tombstone. Nothing to do in the steady state. ``pods`` from the
    watch cache may not show the scaler's deletions yet: ``live_pods`` (the API server's list) confirms
    any candidate first, so they are not deleted twice.
    """
    ready = retired_pods(job.name, workflow, pods).ready
    if ready and live_pods is not None:
        ready = retired_pods(job.name, workflow, live_pods()).ready
    if not ready:
        return
    objects.delete_pods(job.namespace, ready)
    metrics.wrote("delete", "Pod", len(ready))
    log.info("deleted %d pod(s) of retired replicas: %s", len(ready), ", ".join(ready), extra=extra)
