"""The reconciler's side of Kueue (docs/queueing.md): a queued DIJob's Workload, read and written.

What to build and what Kueue's answer means is decided in :mod:`dihera.queueing` (pure); this module
reads the Workload from the watch cache (the API server only when the cache has none yet), creates it,
reads the flavors of an admission, and makes the status writes the job side owes Kueue: releasing an
evicted Workload's quota once its replicas are stopped, and ``Finished`` when the job ended.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from dihera.constants import ANNOTATION_WORKLOAD_SLICE, LABEL_JOB, Phase
from dihera.controller.metrics import Metrics
from dihera.controller.shrink import GROW_POLL, Shrinker, waits_for_quota
from dihera.kube.jobs import StatusConflict
from dihera.kube.workloads import KueueObjectMissing
from dihera.model import DIJob
from dihera.objects import metadata
from dihera.queueing import (
    KueueSettings,
    Placement,
    QueueState,
    WorkloadView,
    build_workload,
    finish_patch,
    placements,
    queue_name,
    queue_state,
    requeue_patch,
    unqueueable,
    workload_name,
)
from dihera.queueing.shrink import shrunk_from
from dihera.queueing.slices import resize_ops

__all__ = ["Queueing", "WorkloadAPI"]

log = logging.getLogger("dihera.controller")
#: Seconds before a job whose Workload could not be created (a missing priority class) is tried again.
RETRY_SECONDS = 30.0


class WorkloadAPI(Protocol):
    """What :class:`Queueing` needs of :class:`dihera.kube.workloads.WorkloadStore`."""

    def get(self, namespace: str, name: str) -> dict[str, object] | None: ...

    def create(self, workload: Mapping[str, object]) -> tuple[dict[str, object], bool]: ...

    def patch_status(
        self, namespace: str, name: str, ops: Sequence[Mapping[str, object]]
    ) -> dict[str, object] | None: ...

    def resource_flavor(self, name: str) -> dict[str, object] | None: ...

    def priority_value(self, name: str) -> int: ...

    def list(self, namespace: str, selector: str) -> list[dict[str, object]]: ...

    def delete(self, namespace: str, name: str) -> bool: ...

    def patch(self, namespace: str, name: str, ops: Sequence[Mapping[str, object]]) -> dict[str, object] | None: ...


class Queueing:
    """One per controller: ``workloads`` is the API, ``cached`` reads a Workload from the watch cache."""

    def __init__(
        self,
        settings: KueueSettings,
        workloads: WorkloadAPI,
        metrics: Metrics,
        clock: Callable[[], str],
        cached: Callable[[str, str], dict[str, object] | None] | None = None,
        cached_of_job: Callable[[str, str], list[dict[str, object]]] | None = None,
        shrinker: Shrinker | None = None,
    ) -> None:
        """``shrinker``: collectors of lower-priority jobs are given back before a job's Workload waits for
        quota (None: Kueue preempts as it would)."""
        self.settings = settings
        self._api = workloads
        self._metrics = metrics
        self._clock = clock
        self._cached = cached
        self._cached_of_job = cached_of_job
        self._shrinker = shrinker

    def _read(self, namespace: str, name: str, live: bool) -> dict[str, object] | None:
        found = None if live or self._cached is None else self._cached(namespace, name)
        return found if found is not None else self._api.get(namespace, name)

    def state(self, job: DIJob, live: bool, extra: Mapping[str, str]) -> QueueState | None:
        """None when Kueue is not involved (no queue label); else the job's Workload, created if missing."""
        queue = queue_name(job.labels)
        if queue is None:
            return None
        workload = self._read(job.namespace, workload_name(job.name), live)
        if workload is None:
            klass = self.settings.priority_class(job.priority, job.preemptible)
            try:
                value = self._api.priority_value(klass)
            except KueueObjectMissing as err:
                log.warning("cannot queue the job: %s", err, extra=extra)
                return unqueueable(queue, str(err), RETRY_SECONDS)
            wanted = build_workload(job, queue, klass, value)
            if self._shrinker is not None:  # before Kueue sees it: it must find the quota free, not preempt
                self._shrinker.make_room(job, wanted, extra)
            workload, created = self._api.create(wanted)
            if created:
                self._metrics.wrote("create", "Workload")
                log.info(
                    "created Workload %s (LocalQueue %s, priority class %s)",
                    workload_name(job.name),
                    queue,
                    klass,
                    extra=extra,
                )
        elif self._shrinker is not None and waits_for_quota(workload):
            self._shrinker.make_room(job, workload, extra)
        return queue_state(queue, workload, self._slices(job, live))

    def grow_back(self, job: DIJob, body: Mapping[str, object], extra: Mapping[str, str]) -> tuple[bool, float | None]:
        """A job that gave collectors back takes them back when its ClusterQueue has the quota: ``(grown,
        seconds before it looks again)``; ``(False, None)`` for any other job (no request)."""
        if self._shrinker is None or queue_name(job.labels) is None:
            return False, None
        return self._shrinker.grow_back(job, body, extra)

    def grow_back_poll(self, job: DIJob) -> float | None:
        """Seconds before a shrunk job looks at its ClusterQueue again (None: it is not shrunk)."""
        return GROW_POLL if self._shrinker is not None and shrunk_from(job.annotations) else None

    def _slices(self, job: DIJob, live: bool) -> list[dict[str, object]]:
        if live or self._cached_of_job is None:
            found = self._api.list(job.namespace, f"{LABEL_JOB}={job.name}")
        else:
            found = self._cached_of_job(job.namespace, job.name)
        slices = [w for w in found if ANNOTATION_WORKLOAD_SLICE in metadata(w).get("annotations", {})]
        return sorted(slices, key=lambda w: int(metadata(w)["annotations"][ANNOTATION_WORKLOAD_SLICE]))

    def placements(self, view: WorkloadView) -> dict[str, Placement]:
        """Task → node labels and tolerations of the flavors Kueue assigned (one GET per flavor)."""
        names = sorted({f for assigned in view.flavors.values() for f in assigned.values()})
        flavors = {name: self._api.resource_flavor(name) or {} for name in names}
        return placements(view, flavors)

    def release(self, job: DIJob, state: QueueState, needed: Mapping[str, int], extra: Mapping[str, str]) -> None:
        """An evicted job whose replicas are all stopped: give the quota back and let Kueue queue it again, as
        one Workload for the whole membership (``needed``: task → replicas): its slices are deleted and its
        podSets resized (allowed once it reserves no quota)."""
        if state.workload is None:
            return
        if not self._patch(job, state.workload, lambda w: requeue_patch(w, self._clock(), state.slice_evicted)):
            return
        for s in state.slices:
            if self._api.delete(job.namespace, s["metadata"]["name"]):
                self._metrics.wrote("delete", "Workload")
        ops = resize_ops(state.workload, needed)
        if ops:
            self._api.patch(job.namespace, workload_name(job.name), ops)
            self._metrics.wrote("patch", "Workload")
        log.info(
            "evicted: replicas stopped, quota of Workload %s released; queued again",
            workload_name(job.name),
            extra=extra,
        )

    def _patch(
        self,
        job: DIJob,
        workload: Mapping[str, object],
        ops_for: Callable[[Mapping[str, object]], Sequence[Mapping[str, object]]],
    ) -> bool:
        """Write ``ops_for(workload)`` to the Workload's status; a copy older than the API server's (the
        watch cache's, or Kueue wrote meanwhile) is read again and the patch recomputed once. True if written."""
        name = workload_name(job.name)
        for attempt in (1, 2):
            ops = ops_for(workload)
            if not ops:
                return False
            try:
                written = self._api.patch_status(job.namespace, name, ops)
            except StatusConflict:
                fresh = self._api.get(job.namespace, name) if attempt == 1 else None
                if fresh is None:
                    raise
                workload = fresh
                continue
            self._metrics.wrote("patch", "Workload/status")
            return written is not None
        return False

    def finish(self, job: DIJob, phase: str, message: str, extra: Mapping[str, str]) -> None:
        """A finished job: mark its Workload Finished (Kueue releases the quota). Idempotent."""
        if queue_name(job.labels) is None:
            return
        workload = self._read(job.namespace, workload_name(job.name), live=False)
        if workload is None:
            return
        if not self._patch(job, workload, lambda w: finish_patch(w, phase == Phase.SUCCEEDED, message, self._clock())):
            return
        log.info("Workload %s finished (%s); its quota is released", workload_name(job.name), phase, extra=extra)
