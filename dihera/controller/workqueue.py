"""The controller's work queue of jobs to reconcile (thread-safe, no Kubernetes I/O), as client-go's
workqueue serves informers.

Watch events only put a job's key in the queue (:meth:`WorkQueue.request` never blocks, so the watches
hand every event over at once and keep no backlog of whole objects); ``workers`` threads
take the keys in order and reconcile them. A key waiting in the queue is there once, however many
events asked for it; a job is reconciled by one thread at a time, and requests arriving during its pass
make one more pass after it (at the back of the queue). A failed pass is retried after a growing delay.
A pass that returns a number of seconds is run again after them (:mod:`dihera.controller.wakeups`), for
decisions that fall due with time.

Events that only report progress (a job's pods and Workflow changing) are *paced*
(:meth:`WorkQueue.request_paced`): the job's next pass waits at least :data:`PACE` times the CPU its
last pass took, so reconciling one job takes at most a tenth of a core however fast its pods change. A
small job's pass takes milliseconds and is not held back; a 2,000-replica job's status is written every
second or so instead of after every batch of pod events, and leaves the CPU to Argo and the API server.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence

from kubernetes.client.exceptions import ApiException

from dihera.controller.wakeups import Wakeups
from dihera.kube.errors import describe_api_error

__all__ = ["PACE", "JobKey", "WorkQueue"]

JobKey = tuple[str, str]  # (namespace, name)
#: A paced request waits this many times the CPU seconds of the job's last pass (at most 1/(PACE+1) of a core a job).
PACE = 9.0
log = logging.getLogger("dihera.controller")


class WorkQueue:
    def __init__(
        self,
        reconcile: Callable[[str, str], float | None],
        retry_delays: Sequence[float] = (1, 2, 5, 10, 30),
        workers: int = 16,
    ) -> None:
        self._reconcile = reconcile
        self._delays = tuple(retry_delays) or (1.0,)
        self._workers = max(1, workers)
        self._cond = threading.Condition()
        self._pending: deque[JobKey] = deque()  # in request order; each key at most once
        self._queued: set[JobKey] = set()  # the keys in _pending
        self._running: set[JobKey] = set()
        self._again: set[JobKey] = set()  # requested during their pass
        self._failures: dict[JobKey, int] = {}
        self._cost: dict[JobKey, float] = {}  # CPU seconds of the job's last pass
        self._threads: list[threading.Thread] = []
        self._closed = False
        self._wakeups: Wakeups[JobKey] = Wakeups(lambda key: self.request(*key))

    def request_after(self, namespace: str, name: str, delay: float) -> None:
        """Reconcile the job ``delay`` seconds from now (at once when 0): every request for it until then,
        delayed or not, is served by that one pass or an earlier one (a burst of events, one pass)."""
        if delay <= 0:
            self.request(namespace, name)
        else:
            self._wakeups.at((namespace, name), delay)

    def request_paced(self, namespace: str, name: str, window: float = 0.0) -> None:
        """Reconcile the job after ``window`` seconds, or after :data:`PACE` times the CPU seconds its last
        pass took if that is longer (a progress report: requests until then are served by that one pass)."""
        with self._cond:
            cost = self._cost.get((namespace, name), 0.0)
        self.request_after(namespace, name, max(window, PACE * cost))

    def wakeups(self) -> dict[JobKey, float]:
        """Job → seconds until it is reconciled again without an event (a retry or a timed pass)."""
        return self._wakeups.pending()

    def depth(self) -> int:
        """How many jobs wait for a worker."""
        with self._cond:
            return len(self._pending)

    def request(self, namespace: str, name: str) -> None:
        """Queue the job for a pass (returns at once): if it is already queued, that pass serves this
        request too; if its pass is running, it runs once more after it."""
        key = (namespace, name)
        with self._cond:
            if self._closed:
                return
            if key in self._running:
                self._again.add(key)
                return
            self._enqueue(key)

    def _enqueue(self, key: JobKey) -> None:
        """Called with the lock held."""
        if key in self._queued:
            return
        self._queued.add(key)
        self._pending.append(key)
        if len(self._threads) < self._workers and len(self._threads) < len(self._pending) + len(self._running):
            thread = threading.Thread(target=self._work, name=f"dihera-reconcile-{len(self._threads)}", daemon=True)
            self._threads.append(thread)
            thread.start()
        self._cond.notify()

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return
                key = self._pending.popleft()
                self._queued.discard(key)
                self._running.add(key)
            ok = self._run_once(key)
            with self._cond:
                self._running.discard(key)
                again = key in self._again
                self._again.discard(key)
                if not ok:
                    self._schedule_retry(key)
                elif again and not self._closed:
                    self._enqueue(key)

    def _run_once(self, key: JobKey) -> bool:
        started = time.thread_time()
        try:
            again = self._reconcile(*key)
        except ApiException as err:
            log.error("reconcile failed: %s; will retry", describe_api_error(err), extra={"job": f"{key[0]}/{key[1]}"})
            return False
        except Exception:
            log.exception("reconcile failed; will retry", extra={"job": f"{key[0]}/{key[1]}"})
            return False
        with self._cond:
            self._failures.pop(key, None)
            self._cost[key] = time.thread_time() - started
        if again is not None:
            self._wakeups.at(key, again)
        return True

    def _schedule_retry(self, key: JobKey) -> None:
        """Called with the lock held: the next pass after a growing delay (an earlier wake-up serves it)."""
        n = self._failures.get(key, 0)
        self._failures[key] = n + 1
        if not self._closed:
            self._wakeups.at(key, self._delays[min(n, len(self._delays) - 1)])

    def forget(self, namespace: str, name: str) -> None:
        """The job is gone: drop its pending retry and timed pass."""
        key = (namespace, name)
        with self._cond:
            self._failures.pop(key, None)
            self._cost.pop(key, None)
        self._wakeups.cancel(key)

    def close(self) -> None:
        """No more passes start (one in progress finishes); the workers exit."""
        with self._cond:
            self._closed = True
            self._pending.clear()
            self._queued.clear()
            self._cond.notify_all()
        self._wakeups.close()
