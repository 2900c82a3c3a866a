"""Idempotency-Key records (pure): their format, expiry and bound, shared by every key store.

A record remembers, for one key of one job, the request's fingerprint and, once done, its answer.
The di-server keeps them on the DIJob (:mod:`dihera.kube.key_annotations`) or in memory
(:mod:`dihera.server.idempotency`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

__all__ = ["Answer", "KeyBusy", "KeyReused", "Record", "decode", "encode", "prune"]

Answer = tuple[int, Any]  # (HTTP status, JSON-serialisable body)


class KeyReused(Exception):
    """The key was used before for another request."""


class KeyBusy(KeyReused):
    """A request with the key is still in progress (on this or another di-server replica)."""


@dataclass(frozen=True)
class Record:
    """One key of one job: the request's fingerprint, when it expires, and its answer once done.

    ``claimed``: when a replica started the request (``status`` None until it is done); a claim older
    than the store's ``stale`` seconds belongs to a replica that died, and is taken over.
    """

    fingerprint: str
    expires: float
    claimed: float
    status: int | None = None
    body: Any = None

    @property
    def done(self) -> bool:
        return self.status is not None

    def answer(self, status: int, body: Any) -> Record:
        return replace(self, status=status, body=body)


def decode(text: str | None) -> dict[str, Record]:
    """The records in an annotation's value (an unreadable value is no records: keys are best-effort)."""
    try:
        raw = json.loads(text) if text else {}
        return {str(k): Record(**v) for k, v in raw.items()}
    except (ValueError, TypeError, AttributeError):
        return {}


def encode(records: Mapping[str, Record]) -> str:
    return json.dumps({k: asdict(r) for k, r in records.items()}, sort_keys=True, separators=(",", ":"))


def prune(records: Mapping[str, Record], now: float, size: int) -> dict[str, Record]:
    """Unexpired records, at most ``size`` - 1 of them (room for one more): the newest claims are kept."""
    alive = sorted(((k, r) for k, r in records.items() if r.expires > now), key=lambda kr: kr[1].claimed)
    return dict(alive[-(size - 1) :] if size > 1 else [])
