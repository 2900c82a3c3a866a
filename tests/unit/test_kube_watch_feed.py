"""The watch layer end to end, as the di-server uses it (KubeBackend over Watches and the Store): list, then
follow watch events; a job's pods found by their job label, also after one is relabelled (scripted API
answers, no cluster)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from dihera.server.backend import KubeBackend
from dihera.server.settings import ServerSettings
from tests.builders import PodBuilder


def pod(name: str, job: str, version: str) -> dict[str, Any]:
    return PodBuilder(name).namespace("ns").uid(f"u-{name}").version(version).job(job).obj()


def dijob(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "uid": f"u-{name}", "resourceVersion": "1"}, "spec": {}}


class Response:
    def __init__(self, body: bytes, lines: list[bytes] | None = None, gate: threading.Event | None = None) -> None:
        self.data, self.status, self._lines, self._gate = body, 200, lines or [], gate

    def stream(self, amt: Any = None, decode_content: bool = False) -> Iterator[bytes]:
        yield from self._lines
        if self._gate is not None:
            self._gate.wait(5)  # a watch with nothing more to say, until the test ends

    def shutdown(self) -> None: ...

    def close(self) -> None: ...

    def release_conn(self) -> None: ...


class FakeList:
    """A listing of ``items``, then one watch with ``events``, then a quiet watch."""

    def __init__(self, items: list[dict[str, Any]], events: list[tuple[str, dict[str, Any]]]) -> None:
        self.items, self.events, self.watches, self.gate = items, events, 0, threading.Event()

    def __call__(self, **kwargs: Any) -> Response:
        if not kwargs.get("watch"):
            return Response(json.dumps({"metadata": {"resourceVersion": "3"}, "items": self.items}).encode())
        self.watches += 1
        if self.watches > 1:
            return Response(b"", gate=self.gate)
        return Response(b"", [json.dumps({"type": t, "object": o}).encode() + b"\n" for t, o in self.events])


def test_list_then_watch_keeps_each_jobs_pods_current(monkeypatch: pytest.MonkeyPatch) -> None:
    pods = FakeList(
        [pod("a-0", "a", "1"), pod("a-1", "a", "2"), pod("b-0", "b", "3")],
        [
            ("ADDED", pod("a-2", "a", "4")),
            ("MODIFIED", pod("a-1", "b", "5")),  # relabelled: moves from job a to job b
            ("DELETED", pod("b-0", "b", "6")),
            ("BOOKMARK", {"metadata": {"resourceVersion": "7"}}),
        ],
    )
    lists = {"DIJob": FakeList([dijob("a"), dijob("b")], []), "ConfigMap": FakeList([], []), "Pod": pods}
    monkeypatch.setattr("dihera.kube.watch.watches.list_call", lambda api, kind, scope: lists[kind.name])
    backend = KubeBackend(client.ApiClient(), ServerSettings(auth=False, namespaces=("ns",)))
    backend.start()
    try:
        assert backend.wait_ready(5)
        deadline = time.monotonic() + 5
        while pods.watches < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert pods.watches >= 2, "the informer did not follow the watch"
        a, b = backend.job("ns", "a"), backend.job("ns", "b")
        assert a is not None and b is not None and a.configmap is None
        assert [p["metadata"]["name"] for p in a.pods] == ["a-0", "a-2"]
        assert [p["metadata"]["name"] for p in b.pods] == ["a-1"]
        assert backend.job("ns", "nope") is None and backend.job("other", "a") is None
    finally:
        for fake in lists.values():
            fake.gate.set()
        backend.stop()
