"""Read answers, serialized once per change of the job: the JSON of a GET is reused until its inputs change.

The watch cache never changes an object in place: every event replaces the object (a new dict), so
the identity of the DIJob, ConfigMap and pod dicts an answer was computed from tells whether it is
still current. One answer per route and job is kept (a new version replaces the old one), so the
memory is bounded by the number of jobs, not by their history. A 2,000-replica job's ``GET replicas``
costs a comparison of references instead of rebuilding and serializing 2,000 rows.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from pydantic import BaseModel, TypeAdapter

__all__ = ["AnswerCache", "to_json"]

_ROWS: dict[type[BaseModel], TypeAdapter[Any]] = {}


def to_json(answer: BaseModel | Sequence[BaseModel], row: type[BaseModel] | None = None) -> bytes:
    """The bytes FastAPI would send for ``answer`` (pydantic's serializer; a list needs its ``row`` model)."""
    if isinstance(answer, BaseModel):
        return answer.model_dump_json().encode()
    if row is None:
        raise ValueError("to_json: a list of rows needs its row model")
    adapter = _ROWS.get(row)
    if adapter is None:
        adapter = _ROWS[row] = TypeAdapter(list[row])  # type: ignore[valid-type]
    return adapter.dump_json(list(answer))


class AnswerCache:
    """At most ``size`` answers, each under its key with the objects it was computed from."""

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._data: dict[Hashable, tuple[tuple[object, ...], bytes]] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable, sources: Sequence[object], compute: Callable[[], bytes]) -> bytes:
        """The answer computed from exactly these ``sources`` (the same objects), else ``compute()``'s."""
        body = self.peek(key, sources)
        if body is not None:
            return body
        body = compute()
        with self._lock:
            self._data.pop(key, None)
            while len(self._data) >= self._size:
                del self._data[next(iter(self._data))]
            self._data[key] = (tuple(sources), body)
        return body

    def peek(self, key: Hashable, sources: Sequence[object]) -> bytes | None:
        """The answer computed from exactly these ``sources``, if there is one; nothing is computed."""
        with self._lock:
            hit = self._data.get(key)
        if hit is None or len(hit[0]) != len(sources):
            return None
        return hit[1] if all(a is b for a, b in zip(hit[0], sources, strict=True)) else None

    def __len__(self) -> int:
        return len(self._data)
