"""EventRecorder: Events sent in the background in order, never dropped for speed, flushed on close."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from dihera.kube.events import EventRecorder

JOB = {
    "apiVersion": "diengine.opendilab.org/v2alpha1",
    "kind": "DIJob",
    "metadata": {"name": "dqn", "namespace": "team-a", "uid": "u1", "resourceVersion": "7"},
}


class RawResponse:
    """What a call with ``_preload_content=False`` returns: its body must be read for the connection to be
    reused (dihera.kube.responses)."""

    def __init__(self) -> None:
        self.drained = False

    def drain_conn(self) -> None:
        self.drained = True


class FakeCore:
    """create_namespaced_event records (thread, reason); ``gate`` (when set) holds every send until opened;
    ``arrived`` names the threads that reached it; ``responses`` what each accepted Event answered."""

    def __init__(self, gate: threading.Event | None = None, refuse: str | None = None) -> None:
        self.sent: list[tuple[str, str]] = []
        self.arrived: list[str] = []
        self.responses: list[RawResponse] = []
        self.gate = gate
        self.refuse = refuse

    def create_namespaced_event(self, namespace: str, body: dict[str, Any], **kw: Any) -> RawResponse:
        self.arrived.append(threading.current_thread().name)
        if self.gate is not None:
            assert self.gate.wait(10), "the test never opened the gate"
        if body["reason"] == self.refuse:
            raise ApiException(status=422, reason="Unprocessable Entity")
        assert namespace == "team-a" and body["involvedObject"]["uid"] == "u1"
        assert kw.get("_preload_content") is False  # the raw body: nothing decodes the echoed Event
        self.sent.append((threading.current_thread().name, body["reason"]))
        self.responses.append(RawResponse())
        return self.responses[-1]


def recorder(core: FakeCore, backlog: int = 1000) -> tuple[EventRecorder, list[int]]:
    posted: list[int] = []
    rec = EventRecorder(client.ApiClient(), on_posted=lambda: posted.append(1), backlog=backlog)
    rec._core = core  # type: ignore[assignment]
    return rec, posted


def test_before_start_an_event_is_sent_by_the_caller() -> None:
    core = FakeCore()
    rec, posted = recorder(core)
    rec.post(JOB, "Normal", "JobPending", "waiting")
    assert core.sent == [(threading.current_thread().name, "JobPending")] and posted == [1]
    # the echoed Event is read and dropped: an unread response keeps its connection out of the pool
    assert [r.drained for r in core.responses] == [True]


def test_started_post_returns_at_once_and_the_sender_keeps_the_order() -> None:
    gate = threading.Event()
    core = FakeCore(gate)
    rec, posted = recorder(core)
    rec.start()
    for reason in ("JobPending", "JobStarting", "JobRunning"):
        rec.post(JOB, "Normal", reason, "m")  # would block on the gate if sent in this thread
    assert core.sent == []
    gate.set()
    rec.close()
    assert core.sent == [("dihera-events", r) for r in ("JobPending", "JobStarting", "JobRunning")]
    assert posted == [1, 1, 1]


def test_a_full_backlog_makes_the_caller_send_its_own_event_nothing_is_dropped() -> None:
    gate = threading.Event()
    core = FakeCore(gate)
    rec, _ = recorder(core, backlog=1)
    rec.start()
    rec.post(JOB, "Normal", "First", "m")  # taken by the sender, which waits at the gate
    for _ in range(100):
        if rec._backlog.empty():
            break
        threading.Event().wait(0.01)
    rec.post(JOB, "Normal", "Second", "m")  # fills the backlog
    caller = threading.Thread(target=rec.post, args=(JOB, "Normal", "Third", "m"), name="caller")
    caller.start()
    for _ in range(1000):  # the caller found the backlog full and sends Third itself, at the gate
        if "caller" in core.arrived:
            break
        threading.Event().wait(0.01)
    gate.set()
    caller.join(10)
    rec.close()
    assert sorted(core.sent) == [("caller", "Third"), ("dihera-events", "First"), ("dihera-events", "Second")]


def test_a_refused_event_is_logged_not_counted_and_the_next_is_still_sent(caplog: pytest.LogCaptureFixture) -> None:
    core = FakeCore(refuse="Bad")
    rec, posted = recorder(core)
    rec.start()
    rec.post(JOB, "Warning", "Bad", "m")
    rec.post(JOB, "Normal", "Good", "m")
    rec.close()
    assert [r for _, r in core.sent] == ["Good"] and posted == [1]
    assert "event Bad not posted" in caplog.text


def test_close_without_start_and_twice_is_harmless() -> None:
    rec, _ = recorder(FakeCore())
    rec.close()
    rec.start()
    rec.close()
    rec.close()
    rec.post(JOB, "Normal", "After", "m")  # stopped: sent by the caller again
    assert [r for _, r in rec._core.sent] == ["After"]  # type: ignore[attr-defined]
