"""The list-then-watch loop over raw JSON (dihera/kube/watch/informer.py), against scripted API answers."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

from dihera.kube.watch.informer import PAGE, Informer, json_lines
from tests.builders import PodBuilder


class Response:
    """What a generated client's call returns with ``_preload_content=False`` (an urllib3 response)."""

    def __init__(self, status: int = 200, body: Any = None, lines: list[Any] | None = None, chunk: int = 7) -> None:
        self.status = status
        self.data = json.dumps(body).encode() if body is not None else b""
        stream = b"".join(json.dumps(line).encode() + b"\n" for line in lines or [])
        self._chunks = [stream[i : i + chunk] for i in range(0, len(stream), chunk)]
        self.closed = self.released = False

    def stream(self, _amt: int, decode_content: bool = True) -> Iterator[bytes]:
        yield from self._chunks

    def close(self) -> None:
        self.closed = True

    def release_conn(self) -> None:
        self.released = True

    def shutdown(self) -> None:
        self.closed = True


def pod(name: str, version: str) -> dict[str, Any]:
    """Pod ``name`` of namespace ``ns`` (its uid: its name) at resourceVersion ``version``."""
    return PodBuilder(name).namespace("ns").uid(name).version(version).obj()


class Script:
    """Answers the informer's calls in order; records them; stops the informer after the last."""

    def __init__(self, answers: list[Response]) -> None:
        self.answers = answers
        self.calls: list[dict[str, Any]] = []
        self.done = threading.Event()
        self.informer: Informer | None = None

    def __call__(self, **kwargs: Any) -> Response:
        self.calls.append(kwargs)
        if len(self.calls) > len(self.answers):
            assert self.informer is not None
            threading.Thread(target=self.informer.stop).start()
            self.done.set()
            return Response(lines=[])
        return self.answers[len(self.calls) - 1]


def run(answers: list[Response]) -> tuple[Script, list[Any]]:
    script, seen = Script(answers), []
    informer = Informer(
        script,
        "pods",
        on_listed=lambda objs, version: seen.append(("listed", [o["metadata"]["name"] for o in objs], version)),
        on_event=lambda kind, obj: seen.append((kind, obj["metadata"]["name"], obj["metadata"]["resourceVersion"])),
        backoffs=(0.01,),
        on_synced=lambda: seen.append(("synced",)),
    )
    script.informer = informer
    informer.start()
    assert script.done.wait(5)
    informer.stop()
    assert informer.synced.is_set()
    return script, seen


def test_json_lines_joins_chunks_and_splits_lines() -> None:
    assert list(json_lines(iter([b'{"a":', b"1}\n{", b'"b":2}\n\n{"c"', b":3}"]))) == [
        b'{"a":1}',
        b'{"b":2}',
        b'{"c":3}',
    ]


def test_json_lines_joins_a_line_spread_over_many_chunks() -> None:
    big = b'{"w":"' + b"x" * 300_000 + b'"}'  # a big job's Workflow event is megabytes
    stream = big + b"\n" + b'{"p":1}\n\n' + big + b"\n  \n"
    for size in (len(stream), 65_536, 7):
        chunks = [stream[i : i + size] for i in range(0, len(stream), size)]
        assert list(json_lines(iter(chunks))) == [big, b'{"p":1}', big, b"  "]
    assert list(json_lines(iter([b"{}\n", b" \n"]))) == [b"{}", b" "]
    assert list(json_lines(iter([b'{"tail":', b"1}"]))) == [b'{"tail":1}']  # no newline at the end


def test_lists_in_pages_then_watches_from_the_listing_and_resumes_after_the_last_event() -> None:
    script, seen = run(
        [
            Response(body={"metadata": {"resourceVersion": "10", "continue": "t1"}, "items": [pod("a", "5")]}),
            Response(body={"metadata": {"resourceVersion": "10"}, "items": [pod("b", "9")]}),
            Response(
                lines=[{"type": "ADDED", "object": pod("c", "11")}, {"type": "MODIFIED", "object": pod("a", "12")}]
            ),
            Response(lines=[{"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "15"}}}]),
            Response(lines=[{"type": "DELETED", "object": pod("b", "16")}]),
        ]
    )
    assert seen == [
        ("listed", ["a", "b"], "10"),
        ("synced",),  # after the whole first listing was handed over
        ("ADDED", "c", "11"),
        ("MODIFIED", "a", "12"),
        ("DELETED", "b", "16"),
    ]
    assert [c.get("limit") for c in script.calls[:2]] == [PAGE, PAGE] and script.calls[1]["_continue"] == "t1"
    watches = [c for c in script.calls if c.get("watch")]
    # each watch resumes where the last ended: after its last event, a bookmark's version included
    assert [c["resource_version"] for c in watches] == ["10", "12", "15", "16"]
    assert all(c["allow_watch_bookmarks"] and c["timeout_seconds"] >= 300 for c in watches)


def test_410_gone_lists_again_and_a_server_error_retries_from_the_same_version() -> None:
    script, seen = run(
        [
            Response(body={"metadata": {"resourceVersion": "10"}, "items": [pod("a", "5")]}),
            Response(status=500, body={"message": "boom"}),
            Response(lines=[{"type": "ERROR", "object": {"kind": "Status", "code": 410, "message": "too old"}}]),
            Response(body={"metadata": {"resourceVersion": "40"}, "items": [pod("b", "33")]}),
        ]
    )
    assert seen == [("listed", ["a"], "10"), ("synced",), ("listed", ["b"], "40")]  # synced once
    assert [(bool(c.get("watch")), c.get("resource_version")) for c in script.calls] == [
        (False, None),
        (True, "10"),  # 500: retried after the backoff, same version
        (True, "10"),  # 410: listed again
        (False, None),
        (True, "40"),
    ]


def test_a_failing_handler_does_not_stop_the_watch() -> None:
    script, seen = (
        Script(
            [
                Response(body={"metadata": {"resourceVersion": "1"}, "items": []}),
                Response(
                    lines=[{"type": "ADDED", "object": pod("a", "2")}, {"type": "ADDED", "object": pod("b", "3")}]
                ),
            ]
        ),
        [],
    )

    def on_event(kind: str, obj: dict[str, Any]) -> None:
        if obj["metadata"]["name"] == "a":
            raise RuntimeError("bug")
        seen.append(obj["metadata"]["name"])

    informer = Informer(script, "pods", on_listed=lambda objs, v: None, on_event=on_event)
    script.informer = informer
    informer.start()
    assert script.done.wait(5)
    informer.stop()
    assert seen == ["b"] and script.calls[-1]["resource_version"] == "3"


def test_a_stop_while_the_watch_request_is_sent_ends_the_watch_at_once() -> None:
    returned = threading.Event()
    informer: Informer | None = None

    def call(**kwargs: Any) -> Response:
        if not kwargs.get("watch"):
            return Response(body={"metadata": {"resourceVersion": "1"}, "items": []})
        assert informer is not None
        informer._stop.set()  # stop() arriving before the response exists: nothing to shut down yet
        returned.set()
        return Quiet()

    class Quiet(Response):
        """A watch with no event yet: its read blocks until the response is shut down or closed."""

        def stream(self, _amt: int, decode_content: bool = True) -> Iterator[bytes]:
            deadline = time.monotonic() + 10
            while not self.closed and time.monotonic() < deadline:
                time.sleep(0.01)
            yield from ()

    informer = Informer(call, "pods", on_listed=lambda o, v: None, on_event=lambda k, o: None)
    informer.start()
    assert returned.wait(5)
    informer._thread.join(2)
    assert not informer._thread.is_alive()  # not left reading a watch nobody will shut down


class _Died(BaseException):
    """Not an Exception: the informer's retry loop does not catch it, so its thread ends."""


def test_alive_until_its_thread_ends_without_being_stopped() -> None:
    """What the controller's /healthz reports: a thread that died is not alive; one stopped on purpose, or
    not started yet, is."""

    def dies(**_: Any) -> Response:
        raise _Died

    informer = Informer(dies, "pods", lambda objs, version: None, lambda kind, obj: None)
    assert informer.alive  # not started
    hook = threading.excepthook
    threading.excepthook = lambda args: None  # the thread's traceback is expected
    try:
        informer.start()
        informer._thread.join(5)
    finally:
        threading.excepthook = hook
    assert not informer.alive
    stopped = Informer(Script([]), "pods", lambda objs, version: None, lambda kind, obj: None)
    stopped.stop()
    assert stopped.alive
