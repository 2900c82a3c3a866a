"""``Idempotency-Key``: a retried request gets the first answer instead of scaling twice.

Keys are remembered per job for ``ttl`` seconds with a fingerprint of the request; the same key
with a different request is refused (409). A request in flight with the same key is waited for.
Server errors (5xx) are forgotten, so the client may retry them.

Two stores answer the same :class:`KeyStore` protocol, over the records of :mod:`dihera.key_records`:

- the di-server's, :class:`dihera.kube.key_annotations.AnnotationKeyStore`, keeps them on the DIJob
  itself (annotation ``diengine/idempotency-keys``, written with a resourceVersion precondition), so
  every replica of the di-server sees every key;
- :class:`IdempotencyStore` keeps them in this process (in-memory backends, tests).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from dihera.key_records import Answer, KeyBusy, KeyReused, Record

__all__ = ["IdempotencyStore", "KeyBusy", "KeyReused", "KeyStore"]


class KeyStore(Protocol):
    def run(self, job: str, key: str, fingerprint: str, call: Callable[[], Answer]) -> Answer:
        """``call()`` once per (job, key) while remembered; later calls with the key get its answer."""
        ...


@dataclass
class _Entry:
    record: Record
    done: threading.Event = field(default_factory=threading.Event)


class IdempotencyStore:
    """The keys of this process only (a second di-server replica would not see them)."""

    def __init__(self, ttl: float, clock: Callable[[], float] = time.monotonic, size: int = 10_000) -> None:
        self._ttl, self._clock, self._size = ttl, clock, size
        self._entries: dict[tuple[str, str], _Entry] = {}
        self._lock = threading.Lock()

    def run(self, job: str, key: str, fingerprint: str, call: Callable[[], Answer]) -> Answer:
        now = self._clock()
        with self._lock:
            self._entries = {k: v for k, v in self._entries.items() if v.record.expires > now or not v.done.is_set()}
            entry = self._entries.get((job, key))
            owner = entry is None
            if entry is None:
                if len(self._entries) >= self._size:
                    raise KeyBusy("too many idempotency keys in use; retry later")
                entry = self._entries[(job, key)] = _Entry(Record(fingerprint, now + self._ttl, now))
        if entry.record.fingerprint != fingerprint:
            raise KeyReused(f"Idempotency-Key {key!r} was already used for a different request on this job")
        if not owner:
            entry.done.wait()
            return entry.record.status or 500, entry.record.body
        try:
            status, body = call()
        except BaseException:
            self._forget(job, key, entry)
            raise
        entry.record = entry.record.answer(status, body)
        if status >= 500:
            self._forget(job, key, entry)
        entry.done.set()
        return status, body

    def _forget(self, job: str, key: str, entry: _Entry) -> None:
        with self._lock:
            self._entries.pop((job, key), None)
        entry.done.set()
