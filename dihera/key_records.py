"""Idempotency-Key records (pure): their format, expiry and bound, shared by every key store.

A record remembers, for one key of one job, the request's fingerprint and, once done, its answer.
The di-server keeps them on the DIJob (:mod:`dihera.kube.key_annotations`) or in memory
(:mod:`dihera.server.idempotency`).

Bounded, so that storing an answer never fails (the annotations of an object hold at most 256 KiB in all):
the fingerprint is a hash (the caller's: 64 characters), the key at most 200 characters (the route's
bound), and an answer is kept whole only up to :data:`ANSWER_BYTES`. A larger one (a scale that added or
removed more than about a dozen replicas) is kept as a one-line 409 that says the request was done and how
to read its result: a retry gets that, never a second scale. With the store's 32 records a job's annotation
stays under ~80 KiB.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

__all__ = ["ANSWER_BYTES", "Answer", "KeyBusy", "KeyReused", "Record", "decode", "encode", "prune"]

Answer = tuple[int, Any]  # (HTTP status, JSON-serialisable body)
#: The largest answer body kept whole (compact JSON); a larger one is kept as a 409 saying it was done.
ANSWER_BYTES = 2048


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
    body: object = None

    @property
    def done(self) -> bool:
        return self.status is not None

    def answer(self, status: int, body: object) -> Record:
        """Done with this answer, kept whole up to :data:`ANSWER_BYTES`; past it, a retry's 409 saying so."""
        size = len(json.dumps(body, separators=(",", ":")))
        if size <= ANSWER_BYTES:
            return replace(self, status=status, body=body)
        return replace(self, status=409, body=_done_too_large(status, body, size))


def _done_too_large(status: int, body: object, size: int) -> str:
    """A retry's answer when the first answer was too large to keep: what was done, in one line."""
    done = ""
    if isinstance(body, Mapping):
        parts = [f"membership generation {body['membershipGeneration']}"] if "membershipGeneration" in body else []
        parts += [f"{k} {len(body[k])}" for k in ("added", "removed") if isinstance(body.get(k), list)]
        done = f": {', '.join(parts)}" if parts else ""
    return (
        f"this Idempotency-Key's request was already done (HTTP {status}{done}) and is not done again; its answer "
        f"({size} bytes) was larger than the {ANSWER_BYTES} kept: read the job's replicas instead"
    )


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
