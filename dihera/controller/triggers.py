"""Which watch event queues which job's pass, and when (no I/O: the watch layer calls in, the work queue
is called).

Every kind's event queues the job its object belongs to (:func:`dihera.kube.watch.job_of`), after the
store has the object:

| kind      | when the pass runs                                                                  |
|-----------|-------------------------------------------------------------------------------------|
| DIJob     | at once; a deleted one is forgotten (its objects go with it, through ownerReferences) |
| Workload  | at once (Kueue's admission or eviction)                                              |
| ConfigMap | at once (a scaler's commit of the membership; a deleted or edited one is repaired)     |
| Service   | at once (a deleted or edited one is repaired)                                        |
| Workflow  | paced (:meth:`~dihera.controller.workqueue.WorkQueue.request_paced`): by the cost of the job's last pass |
| Pod       | paced, at least ``pod_batch`` seconds later: a burst of pod events, one pass and one status write |

An event that only delivers the controller's own write (a status patch, a Workflow it patched:
:meth:`dihera.kube.watch.Store.own_write`) queues nothing: the pass that wrote it already decided from
it, and a big job's status writes would otherwise each cost one more pass over all its replicas.
A listing queues every job it brought or dropped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol

from dihera.kube.watch import JobKey, Store, job_of

__all__ = ["Queue", "Triggers"]

log = logging.getLogger("dihera.controller")

#: Kinds whose events may deliver the controller's own writes (skipped when they do).
OWN_WRITES = frozenset({"DIJob", "Workload", "Workflow", "ConfigMap", "Service"})


class Queue(Protocol):
    """What :class:`Triggers` needs of :class:`dihera.controller.workqueue.WorkQueue`."""

    def request(self, namespace: str, name: str) -> None: ...

    def request_paced(self, namespace: str, name: str, window: float = 0.0) -> None: ...

    def forget(self, namespace: str, name: str) -> None: ...


class Triggers:
    """The watch layer's callbacks (``on_event``, ``on_listed``, ``on_ready``) for the controller."""

    def __init__(
        self, store: Store, queue: Queue, pod_batch: float, release_if_idle: Callable[[str], None] = lambda ns: None
    ) -> None:
        self._store = store
        self._queue = queue
        #: kind → seconds its event's pass waits at least (paced), or None: at once
        self._windows: Mapping[str, float | None] = {
            "DIJob": None,
            "Workload": None,
            "ConfigMap": None,
            "Service": None,
            "Workflow": 0.0,
            "Pod": pod_batch,
        }
        self._release_if_idle = release_if_idle

    def on_event(self, kind: str, type_: str, obj: Mapping[str, object]) -> None:
        job = job_of(kind, obj)
        if job is None:
            return
        if type_ == "DELETED" and kind == "DIJob":
            self._queue.forget(*job)
            log.info("DIJob deleted; its objects go with it (ownerReferences)", extra={"job": "/".join(job)})
            self._release_if_idle(job[0])
            return
        if type_ != "DELETED" and kind in OWN_WRITES and self._store.own_write(obj):
            return  # our own write coming back: the pass that made it saw it
        self._queue_jobs(kind, (job,))
        if type_ == "DELETED":
            self._release_if_idle(job[0])

    def on_listed(
        self, kind: str, listed: Sequence[Mapping[str, object]], gone: Sequence[Mapping[str, object]]
    ) -> None:
        if kind == "DIJob":  # deleted while the watch was being restarted
            for obj in gone:
                self.on_event(kind, "DELETED", obj)
            gone = []
        jobs = {key for key in (job_of(kind, o) for o in (*listed, *gone)) if key is not None}
        self._queue_jobs(kind, sorted(jobs))

    def on_ready(self, jobs: set[JobKey]) -> None:
        """A namespace's jobs' objects are listed: the jobs whose pass waited for them run now."""
        for namespace, name in sorted(jobs):
            self._queue.request(namespace, name)

    def _queue_jobs(self, kind: str, jobs: Iterable[JobKey]) -> None:
        window = self._windows.get(kind)
        for namespace, name in jobs:
            if window is None:
                self._queue.request(namespace, name)
            else:
                self._queue.request_paced(namespace, name, window)
