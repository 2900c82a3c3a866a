"""Reads and writes of Kueue objects for queued DIJobs: Workloads, their status, ResourceFlavors and
WorkloadPriorityClasses (docs/queueing.md). What to write is decided in :mod:`dihera.queueing`.

Every call names the object in its errors; "already exists" and "not found" are answers, not errors.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import cast

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from dihera.constants import ANNOTATION_WORKLOAD_SLICE, FIELD_MANAGER_CONTROLLER, KUEUE_GROUP, KUEUE_VERSION, LABEL_JOB
from dihera.errors import QuotaRefused
from dihera.kube.jobs import StatusConflict
from dihera.model import DIJob
from dihera.objects import metadata
from dihera.patches import precondition
from dihera.queueing import KueueSettings, build_workload, queue_name, slice_name, view_workload, workload_name
from dihera.queueing.slices import added_replicas, plan_release

__all__ = ["SLICE_POLL", "WORKLOAD_PLURAL", "KueueObjectMissing", "QuotaGate", "WorkloadStore"]

log = logging.getLogger(__name__)
#: Seconds between two reads of a slice Workload waiting for Kueue's answer (a small object).
SLICE_POLL = 0.5

WORKLOAD_PLURAL = "workloads"
JSON_PATCH = "application/json-patch+json"


class KueueObjectMissing(LookupError):
    """A Kueue object the job needs does not exist (a WorkloadPriorityClass the settings name)."""


def _as_dict(obj: object) -> dict[str, object]:
    return cast(dict[str, object], obj)


class WorkloadStore:
    """Typed access to Kueue's API (``kueue.x-k8s.io/v1beta2``) through one API client (no I/O until called)."""

    def __init__(self, api: client.ApiClient) -> None:
        self._custom = client.CustomObjectsApi(api)

    def get(self, namespace: str, name: str) -> dict[str, object] | None:
        try:
            obj = self._custom.get_namespaced_custom_object(
                KUEUE_GROUP, KUEUE_VERSION, namespace, WORKLOAD_PLURAL, name
            )
        except ApiException as err:
            if err.status == 404:
                return None
            raise
        return _as_dict(obj)

    def list(self, namespace: str, selector: str) -> list[dict[str, object]]:
        resp = self._custom.list_namespaced_custom_object(
            KUEUE_GROUP, KUEUE_VERSION, namespace, WORKLOAD_PLURAL, label_selector=selector
        )
        items = _as_dict(resp).get("items")
        return [_as_dict(i) for i in items if isinstance(i, dict)] if isinstance(items, list) else []

    def create(self, workload: Mapping[str, object]) -> tuple[dict[str, object], bool]:
        """``(workload, created)``; one that already exists is read back."""
        meta = metadata(workload)
        try:
            created = self._custom.create_namespaced_custom_object(
                KUEUE_GROUP, KUEUE_VERSION, meta["namespace"], WORKLOAD_PLURAL, dict(workload)
            )
        except ApiException as err:
            if err.status != 409:
                raise
            found = self.get(meta["namespace"], meta["name"])
            if found is None:
                raise RuntimeError(f"Workload {meta['namespace']}/{meta['name']} exists but cannot be read") from err
            return found, False
        return _as_dict(created), True

    def patch_status(self, namespace: str, name: str, ops: Sequence[Mapping[str, object]]) -> dict[str, object] | None:
        """A JSON patch of ``workloads/status`` (with its own resourceVersion precondition): the Workload as written,
        None when it is gone, :class:`StatusConflict` when it changed since it was read."""
        try:
            written = self._custom.patch_namespaced_custom_object_status(
                KUEUE_GROUP,
                KUEUE_VERSION,
                namespace,
                WORKLOAD_PLURAL,
                name,
                [dict(op) for op in ops],
                field_manager=FIELD_MANAGER_CONTROLLER,
                _content_type=JSON_PATCH,
            )
        except ApiException as err:
            if err.status == 404:
                return None
            if err.status == 409:
                raise StatusConflict(f"Workload {namespace}/{name} changed since it was read") from err
            raise
        return _as_dict(written)

    def patch(self, namespace: str, name: str, ops: Sequence[Mapping[str, object]]) -> dict[str, object] | None:
        """A JSON patch of a Workload (its spec: the podSets of a requeued job); None when it is gone."""
        try:
            written = self._custom.patch_namespaced_custom_object(
                KUEUE_GROUP,
                KUEUE_VERSION,
                namespace,
                WORKLOAD_PLURAL,
                name,
                [dict(op) for op in ops],
                field_manager=FIELD_MANAGER_CONTROLLER,
                _content_type=JSON_PATCH,
            )
        except ApiException as err:
            if err.status == 404:
                return None
            raise
        return _as_dict(written)

    def delete(self, namespace: str, name: str) -> bool:
        """Delete a Workload (its quota is released); False when it was already gone."""
        try:
            self._custom.delete_namespaced_custom_object(KUEUE_GROUP, KUEUE_VERSION, namespace, WORKLOAD_PLURAL, name)
        except ApiException as err:
            if err.status == 404:
                return False
            raise
        return True

    def resource_flavor(self, name: str) -> dict[str, object] | None:
        try:
            obj = self._custom.get_cluster_custom_object(KUEUE_GROUP, KUEUE_VERSION, "resourceflavors", name)
        except ApiException as err:
            if err.status == 404:
                return None
            raise
        return _as_dict(obj)

    def priority_value(self, name: str) -> int:
        """The value of WorkloadPriorityClass ``name``; :class:`KueueObjectMissing` when there is none."""
        try:
            obj = self._custom.get_cluster_custom_object(KUEUE_GROUP, KUEUE_VERSION, "workloadpriorityclasses", name)
        except ApiException as err:
            if err.status == 404:
                raise KueueObjectMissing(
                    f"WorkloadPriorityClass {name!r} does not exist (the chart's kueue.priorityClasses create "
                    "them; or create it, or map spec.priority to another with --kueue-priority-classes)"
                ) from err
            raise
        return int(cast(int, _as_dict(obj).get("value") or 0))


class QuotaGate:
    """Scaling a queued job under its quota (docs/queueing.md, "Scaling under quota"): a scale-up's added
    replicas must be admitted by Kueue (a slice Workload) before the scaler commits them; a scale-down
    gives the quota back. Jobs without the queue label pass through untouched (no request)."""

    def __init__(
        self,
        store: WorkloadStore,
        settings: KueueSettings,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._store, self._settings, self._sleep, self._clock = store, settings, sleep, clock

    def admit(self, job: DIJob, before: Mapping[str, int], after: Mapping[str, int], generation: int) -> None:
        """Raise :class:`dihera.errors.QuotaRefused` unless Kueue admits the replicas ``after`` adds to
        ``before`` (task → replicas) within ``scale_wait`` seconds; the refused slice is deleted."""
        queue = queue_name(job.labels)
        added = added_replicas(before, after)
        if queue is None or not added:
            return
        name = slice_name(job.name, generation)
        klass = self._settings.priority_class(job.priority, job.preemptible)
        try:
            value = self._store.priority_value(klass)
        except KueueObjectMissing as err:
            raise QuotaRefused(f"scale-up of DIJob {job.id} refused: {err}") from err
        annotations = {ANNOTATION_WORKLOAD_SLICE: str(generation)}
        wl, _ = self._store.create(build_workload(job, queue, klass, value, added, name, annotations))
        deadline = self._clock() + self._settings.scale_wait
        view = view_workload(wl)
        while not view.admitted and view.evicted is None and self._clock() < deadline:
            self._sleep(SLICE_POLL)
            found = self._store.get(job.namespace, name)
            if found is None:
                break
            view = view_workload(found)
        if view.admitted:
            log.info("Kueue admitted slice %s for %s", name, _describe(added), extra={"job": job.id})
            return
        self._store.delete(job.namespace, name)
        why = view.waiting or (f"evicted ({view.evicted[0]}: {view.evicted[1]})" if view.evicted else "no answer yet")
        raise QuotaRefused(
            f"scale-up of DIJob {job.id} to {_describe(after)} refused: Kueue did not admit the added "
            f"{_describe(added)} in LocalQueue {queue} within {self._settings.scale_wait:g}s: {why}"
        )

    def release(self, job: DIJob, needed: Mapping[str, int]) -> None:
        """After a scale-down to ``needed``: delete the slices no longer needed, mark the rest reclaimable."""
        if queue_name(job.labels) is None:
            return
        base = self._store.get(job.namespace, workload_name(job.name))
        if base is None:
            return
        plan = plan_release(base, self.slices(job), needed)
        for name in plan.delete:
            self._store.delete(job.namespace, name)
        if plan.reclaimable is not None:
            value = [{"name": k, "count": v} for k, v in plan.reclaimable.items()]
            ops = [
                precondition(base),
                {"op": "add", "path": "/status/reclaimablePods", "value": value},
            ]
            self._store.patch_status(job.namespace, workload_name(job.name), ops)
        if plan.delete or plan.reclaimable is not None:
            log.info(
                "scale-down released quota: deleted %s, reclaimable %s",
                list(plan.delete),
                plan.reclaimable,
                extra={"job": job.id},
            )

    def slices(self, job: DIJob) -> list[dict[str, object]]:
        """The job's slice Workloads, oldest (lowest generation) first."""
        found = [
            w
            for w in self._store.list(job.namespace, f"{LABEL_JOB}={job.name}")
            if ANNOTATION_WORKLOAD_SLICE in metadata(w).get("annotations", {})
        ]
        return sorted(found, key=lambda w: int(metadata(w)["annotations"][ANNOTATION_WORKLOAD_SLICE]))


def _describe(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{task} {n}" for task, n in counts.items())
