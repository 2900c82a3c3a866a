"""Reconciles due at a time rather than on an event (``activeDeadlineSeconds``, ``ttlSecondsAfterFinished``).

One thread sleeps until the earliest due key and calls ``fire`` with it, which must return at once (the
reconcile queue's ``request`` only queues the job), so no wake-up waits for another's work. Per key only
the earliest wake-up asked for is kept: a pass that finds nothing due yet asks again.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["Wakeups"]

log = logging.getLogger("dihera.controller")

K = TypeVar("K", bound=Hashable)


class Wakeups(Generic[K]):
    def __init__(self, fire: Callable[[K], None], clock: Callable[[], float] = time.monotonic) -> None:
        self._fire, self._clock = fire, clock
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, K]] = []
        self._due: dict[K, float] = {}
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None
        self._closed = False

    def at(self, key: K, delay: float) -> None:
        """Fire ``key`` after ``delay`` seconds, unless an earlier wake-up is already due for it."""
        due = self._clock() + max(delay, 0.0)
        with self._cond:
            if self._closed or self._due.get(key, float("inf")) <= due:
                return
            self._due[key] = due
            heapq.heappush(self._heap, (due, next(self._seq), key))
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="dihera-wakeups", daemon=True)
                self._thread.start()
            self._cond.notify()

    def cancel(self, key: K) -> None:
        with self._cond:
            self._due.pop(key, None)  # its heap entry is skipped when it comes up

    def pending(self) -> dict[K, float]:
        """Key → seconds until its wake-up (for tests and logs)."""
        with self._cond:
            now = self._clock()
            return {k: due - now for k, due in self._due.items()}

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._due.clear()
            self._heap.clear()
            self._cond.notify()

    def _next_due(self) -> K | None:
        """Wait (lock held) for the earliest wake-up; None once closed."""
        while not self._closed:
            if not self._heap:
                self._cond.wait()
                continue
            due, _, key = self._heap[0]
            if self._due.get(key) != due:  # cancelled or replaced by an earlier one
                heapq.heappop(self._heap)
                continue
            wait = due - self._clock()
            if wait > 0:
                self._cond.wait(wait)
                continue
            heapq.heappop(self._heap)
            del self._due[key]
            return key
        return None

    def _loop(self) -> None:
        while True:
            with self._cond:
                key = self._next_due()
            if key is None:
                return
            try:
                self._fire(key)
            except Exception:
                log.exception("wake-up of %s failed", key)
