"""``Idempotency-Key``: a retried request gets the first answer instead of scaling twice.

Keys are remembered per job for ``ttl`` seconds with a fingerprint of the request; the same key
with a different request is refused (409). A request in flight with the same key is waited for.
Server errors (5xx) are forgotten, so the client may retry them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["IdempotencyStore", "KeyReused", "Stored"]


@dataclass
class Stored:
    fingerprint: str
    expires: float
    done: threading.Event = field(default_factory=threading.Event)
    status: int = 0
    body: Any = None


class KeyReused(Exception):
    """The key was used before for another request."""


class IdempotencyStore:
    def __init__(self, ttl: float, clock: Callable[[], float] = time.monotonic, size: int = 10_000) -> None:
        self._ttl, self._clock, self._size = ttl, clock, size
        self._entries: dict[tuple[str, str], Stored] = {}
        self._lock = threading.Lock()

    def run(self, job: str, key: str, fingerprint: str, call: Callable[[], tuple[int, Any]]) -> tuple[int, Any]:
        """``call()`` once per (job, key); later calls with the same key get its (status, body)."""
        now = self._clock()
        with self._lock:
            self._entries = {k: v for k, v in self._entries.items() if v.expires > now or not v.done.is_set()}
            entry = self._entries.get((job, key))
            owner = entry is None
            if entry is None:
                if len(self._entries) >= self._size:
                    raise KeyReused("too many idempotency keys in use; retry later")
                entry = self._entries[(job, key)] = Stored(fingerprint, now + self._ttl)
        if entry.fingerprint != fingerprint:
            raise KeyReused(f"Idempotency-Key {key!r} was already used for a different request on this job")
        if not owner:
            entry.done.wait()
            return entry.status, entry.body
        try:
            entry.status, entry.body = call()
        except BaseException:
            with self._lock:
                self._entries.pop((job, key), None)
            entry.status, entry.body = 500, None
            entry.done.set()
            raise
        if entry.status >= 500:
            with self._lock:
                self._entries.pop((job, key), None)
        entry.done.set()
        return entry.status, entry.body
