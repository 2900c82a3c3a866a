"""What Kueue's answer means for a queued job right now (pure): admitted, or held and why.

:func:`queue_state` reads the job's Workload and its scale-up slices (docs/queueing.md, "Scaling under
quota") as :mod:`dihera.controller.kueue` observed them; :mod:`dihera.controller.decide.hold` holds the job
(phase Queued) while ``hold`` says why.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dihera.constants import EventReason
from dihera.queueing.workload import WorkloadView, view_workload

__all__ = ["QueueState", "queue_state", "unqueueable"]


@dataclass(frozen=True)
class QueueState:
    """A queued job's Workload as one pass saw it. ``hold``: why the job may not run (None: admitted);
    ``cause``: the Event reason of that (Evicted); ``retry``: seconds before the pass must run again."""

    workload: Mapping[str, Any] | None
    view: WorkloadView | None
    hold: str | None
    cause: str | None = None
    retry: float | None = None
    #: The job's scale-up slices (docs/queueing.md, "Scaling under quota"), oldest first.
    slices: tuple[Mapping[str, Any], ...] = ()
    #: ``(reason, message)`` of a slice Kueue evicted (the whole job is stopped and requeued then).
    slice_evicted: tuple[str, str] | None = None

    @property
    def requeue_due(self) -> bool:
        """Evicted (the job's Workload or a slice) and still holding quota: release it once nothing runs."""
        if self.view is None:
            return False
        return self.view.requeue_due or (self.slice_evicted is not None and self.view.reserved)


def _hold_message(queue: str, view: WorkloadView, slice_evicted: tuple[str, str] | None) -> tuple[str, str | None]:
    evicted = view.evicted or slice_evicted
    if evicted is not None:
        reason, message = evicted
        return f"evicted by Kueue ({reason}: {message}); queued again in LocalQueue {queue}", EventReason.EVICTED
    why = f": {view.waiting}" if view.waiting else ""
    return f"waiting for Kueue to admit Workload {view.name} in LocalQueue {queue}{why}", None


def queue_state(queue: str, workload: Mapping[str, Any], slices: Sequence[Mapping[str, Any]]) -> QueueState:
    """The state of a job queued in LocalQueue ``queue``: its Workload and its slices (oldest first)."""
    view = view_workload(workload)
    slice_evicted = next((v.evicted for v in map(view_workload, slices) if v.evicted is not None), None)
    if view.admitted and slice_evicted is None:
        return QueueState(workload, view, None, slices=tuple(slices))
    hold, cause = _hold_message(queue, view, slice_evicted)
    return QueueState(workload, view, hold, cause, slices=tuple(slices), slice_evicted=slice_evicted)


def unqueueable(queue: str, why: str, retry: float) -> QueueState:
    """A job whose Workload cannot be created (a missing priority class): held, tried again in ``retry`` s."""
    return QueueState(None, None, f"cannot queue the job in LocalQueue {queue}: {why}", retry=retry)
