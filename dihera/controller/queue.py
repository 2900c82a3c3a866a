"""Per-job serialisation and coalescing of reconciles (thread-safe, no Kubernetes I/O).

Events for one job (its DIJob, Workflow and pods) arrive on many kopf workers at once. Only one
reconcile of a job runs at a time; requests arriving meanwhile collapse into one more pass after it.
A failed pass is retried after a growing delay. A pass that returns a number of seconds is run
again after them (:mod:`dihera.controller.wakeups`), for decisions that fall due with time.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

from kubernetes.client.exceptions import ApiException

from dihera.controller.wakeups import Wakeups
from dihera.kube.errors import describe_api_error

__all__ = ["JobKey", "ReconcileQueue"]

JobKey = tuple[str, str]  # (namespace, name)
log = logging.getLogger("dihera.controller")


class ReconcileQueue:
    def __init__(
        self, reconcile: Callable[[str, str], float | None], retry_delays: Sequence[float] = (1, 2, 5, 10, 30)
    ) -> None:
        self._reconcile = reconcile
        self._delays = tuple(retry_delays) or (1.0,)
        self._lock = threading.Lock()
        self._running: set[JobKey] = set()
        self._again: set[JobKey] = set()
        self._failures: dict[JobKey, int] = {}
        self._timers: dict[JobKey, threading.Timer] = {}
        self._closed = False
        self._wakeups: Wakeups[JobKey] = Wakeups(lambda key: self.request(*key))

    def request_after(self, namespace: str, name: str, delay: float) -> None:
        """Reconcile the job ``delay`` seconds from now (at once when 0): every request for it until then,
        delayed or not, is served by that one pass or an earlier one (a burst of events, one pass)."""
        if delay <= 0:
            self.request(namespace, name)
        else:
            self._wakeups.at((namespace, name), delay)

    def wakeups(self) -> dict[JobKey, float]:
        """Job → seconds until it is reconciled again without an event."""
        return self._wakeups.pending()

    def request(self, namespace: str, name: str) -> None:
        """Reconcile the job now in this thread, or make the pass in progress run once more."""
        key = (namespace, name)
        with self._lock:
            if self._closed:
                return
            if key in self._running:
                self._again.add(key)
                return
            self._running.add(key)
        while True:
            ok = self._run_once(key)
            with self._lock:
                if ok and key in self._again:
                    self._again.discard(key)
                    continue
                self._again.discard(key)
                self._running.discard(key)
                if not ok:
                    self._schedule_retry(key)
                return

    def _run_once(self, key: JobKey) -> bool:
        try:
            again = self._reconcile(*key)
        except ApiException as err:
            log.error("reconcile failed: %s; will retry", describe_api_error(err), extra={"job": f"{key[0]}/{key[1]}"})
            return False
        except Exception:
            log.exception("reconcile failed; will retry", extra={"job": f"{key[0]}/{key[1]}"})
            return False
        with self._lock:
            self._failures.pop(key, None)
        if again is not None:
            self._wakeups.at(key, again)
        return True

    def _schedule_retry(self, key: JobKey) -> None:
        """Called with the lock held."""
        n = self._failures.get(key, 0)
        self._failures[key] = n + 1
        if key in self._timers or self._closed:
            return
        delay = self._delays[min(n, len(self._delays) - 1)]

        def fire() -> None:
            with self._lock:
                self._timers.pop(key, None)
            self.request(*key)

        timer = threading.Timer(delay, fire)
        timer.daemon = True
        self._timers[key] = timer
        timer.start()

    def forget(self, namespace: str, name: str) -> None:
        """The job is gone: drop its pending retry."""
        with self._lock:
            key = (namespace, name)
            self._failures.pop(key, None)
            timer = self._timers.pop(key, None)
        self._wakeups.cancel(key)
        if timer is not None:
            timer.cancel()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            timers = list(self._timers.values())
            self._timers.clear()
        self._wakeups.close()
        for t in timers:
            t.cancel()
