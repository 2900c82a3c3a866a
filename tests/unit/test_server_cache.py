"""The watch-backed Informer: list, then follow watch events; pods looked up by their job's index."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

from dihera.constants import LABEL_JOB
from dihera.kube.cache import Informer


def pod(name: str, job: str, version: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": version, "labels": {LABEL_JOB: job}}}


class Response:
    def __init__(self, body: bytes, lines: list[bytes] | None = None, gate: threading.Event | None = None) -> None:
        self.data, self.status, self._lines, self._gate = body, 200, lines or [], gate

    def stream(self, amt: Any = None, decode_content: bool = False) -> Iterator[bytes]:
        yield from self._lines
        if self._gate is not None:
            self._gate.wait(5)  # a watch with nothing more to say, until the test ends

    def close(self) -> None: ...

    def release_conn(self) -> None: ...


class FakeApi:
    """A list of two jobs' pods, then one watch with these events, then a quiet watch."""

    def __init__(self, events: list[tuple[str, dict[str, Any]]]) -> None:
        self.events, self.watches, self.gate = events, 0, threading.Event()

    def list_pods(self, **kwargs: Any) -> Response:
        if not kwargs.get("watch"):
            items = [pod("a-0", "a", "1"), pod("a-1", "a", "2"), pod("b-0", "b", "3")]
            return Response(json.dumps({"metadata": {"resourceVersion": "3"}, "items": items}).encode())
        self.watches += 1
        if self.watches > 1:
            return Response(b"", gate=self.gate)
        return Response(b"", [json.dumps({"type": t, "object": o}).encode() + b"\n" for t, o in self.events])


def names(informer: Informer, job: str) -> list[str]:
    return sorted(p["metadata"]["name"] for p in informer.indexed(("ns", job)))


def test_list_then_watch_keeps_the_job_index_current() -> None:
    api = FakeApi(
        [
            ("ADDED", pod("a-2", "a", "4")),
            ("MODIFIED", pod("a-1", "b", "5")),  # relabelled: moves from job a to job b
            ("DELETED", pod("b-0", "b", "6")),
            ("BOOKMARK", {"metadata": {"resourceVersion": "7"}}),
        ]
    )
    informer = Informer("pods", api.list_pods, index=lambda p: ("ns", p["metadata"]["labels"][LABEL_JOB]))
    informer.start()
    try:
        assert informer.synced.wait(5)
        deadline = time.monotonic() + 5
        while api.watches < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert api.watches >= 2, "the informer did not follow the watch"
        assert names(informer, "a") == ["a-0", "a-2"]
        assert names(informer, "b") == ["a-1"]
        assert informer.indexed(("ns", "nope")) == []
        assert informer.get("ns", "b-0") is None and informer.get("ns", "a-1") is not None
    finally:
        informer.stop()
        api.gate.set()
