"""`dihera scale --server`'s calls: the same Idempotency-Key on every attempt, attempts again only while no
final answer came back, gives up after its time (httpx.MockTransport stands in for the di-server)."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest

from dihera.cli.server_calls import RETRY_STATUSES, Retry, new_key, send

FAST = Retry(seconds=5.0, first_wait=0.01, max_wait=0.02, timeout=1.0)
URL = "http://di-server.test/v2alpha1/job/ns.job/replicas"


Answer = Callable[[httpx.Request], httpx.Response]


def di_server(answers: list[Answer]) -> tuple[httpx.MockTransport, list[httpx.Request]]:
    """A transport answering the n-th request with ``answers[n]`` (the last one from then on); the requests."""
    seen: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return answers[min(len(seen), len(answers)) - 1](request)

    return httpx.MockTransport(handle), seen


def refused(request: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError("connection refused", request=request)


def lost(request: httpx.Request) -> httpx.Response:  # the server died after reading the request
    raise httpx.RemoteProtocolError("Server disconnected without sending a response.", request=request)


def answer(status: int, **headers: str) -> Answer:
    return lambda request: httpx.Response(status, json={"code": status}, headers=headers)


def test_no_answer_is_sent_again_with_the_same_key_until_one_comes() -> None:
    transport, seen = di_server([refused, lost, answer(200)])
    said: list[str] = []
    resp = send("POST", URL, key="k-1", headers={"Authorization": "Bearer t"}, json={"replicas": 1},
                params={"task": "collector"}, retry=FAST, say=said.append, transport=transport)  # fmt: skip
    assert resp.status_code == 200 and len(seen) == 3
    assert {r.headers["Idempotency-Key"] for r in seen} == {"k-1"}
    assert {r.headers["Authorization"] for r in seen} == {"Bearer t"}
    assert {(r.url.params["task"], r.content) for r in seen} == {("collector", b'{"replicas":1}')}
    assert len(said) == 2 and "ConnectError" in said[0] and "RemoteProtocolError" in said[1], said
    assert all("k-1" in line for line in said)


@pytest.mark.parametrize("status", sorted(RETRY_STATUSES))
def test_an_answer_that_says_come_back_later_is_sent_again(status: int) -> None:
    transport, seen = di_server([answer(status, **{"Retry-After": "0"}), answer(200)])
    resp = send("PUT", URL, key="k", headers={}, retry=FAST, say=lambda _: None, transport=transport)
    assert resp.status_code == 200 and len(seen) == 2


@pytest.mark.parametrize("status", [200, 400, 403, 404, 409, 422, 500])
def test_a_final_answer_is_returned_at_once(status: int) -> None:
    transport, seen = di_server([answer(status), answer(200)])
    said: list[str] = []
    resp = send("DELETE", URL, key="k", headers={}, retry=FAST, say=said.append, transport=transport)
    assert resp.status_code == status and len(seen) == 1 and not said


def test_after_its_time_it_raises_the_last_transport_error_or_returns_the_last_answer() -> None:
    short = Retry(seconds=0.2, first_wait=0.05, max_wait=0.05, timeout=1.0)
    transport, seen = di_server([refused])
    with pytest.raises(httpx.ConnectError):
        send("POST", URL, key="k", headers={}, retry=short, say=lambda _: None, transport=transport)
    assert 2 <= len(seen) <= 6, len(seen)
    transport, seen = di_server([answer(503)])
    resp = send("POST", URL, key="k", headers={}, retry=short, say=lambda _: None, transport=transport)
    assert resp.status_code == 503 and 2 <= len(seen) <= 6, len(seen)


def test_keys_are_new_for_each_command() -> None:
    keys = {new_key() for _ in range(100)}
    assert len(keys) == 100 and all(k.startswith("dihera-cli-") and len(k) <= 200 for k in keys)
