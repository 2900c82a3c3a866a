"""The di-server as an attacker finds it: the real app under a real uvicorn on 127.0.0.1, an in-memory backend.

A body without a valid token is refused before it is read (the server's memory does not grow with it), a
body over the bound gets 413, distinct bogus tokens past the review budget get 429, a 500 carries nothing
of the API server's answer, ``/docs`` is not served, and ``--no-auth`` listens on loopback only.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
from kubernetes.client.exceptions import ApiException

from dihera.cli import build_parser
from dihera.cli.server import settings_from_args
from dihera.scaling import ScaleRequest
from dihera.server import ServerSettings, create_app
from dihera.server.settings import is_loopback
from tests.unit.fake_backend import ADMIN
from tests.unit.live_server import (
    CountingBackend,
    memory_kib,
    send_streamed,
    served,
    served_apart,
    standard_backend,
)

MiB = 1024 * 1024
ATTACK = 300 * MiB
PUT = "/v1/namespaces/team-a/dijobs/dqn/tasks/collector/replicas"
POST_V2 = "/v2alpha1/job/team-a.dqn/replicas"


def body_of(size: int, chunk: int = MiB) -> Iterator[bytes]:
    """``size`` bytes of a JSON-looking body, made as they are sent (the client never holds them)."""
    block = b"[" + b"1," * (chunk // 2 - 1) + b"1"
    for start in range(0, size, chunk):
        yield block[: min(chunk, size - start)]


@pytest.fixture(scope="module")
def apart() -> Iterator[tuple[int, int]]:
    with served_apart() as port_pid:
        yield port_pid


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_300_mb_without_a_token_is_refused_unread_and_costs_no_memory(
    apart: tuple[int, int], chunked: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    port, pid = apart
    warm = send_streamed(port, "PUT", PUT, body_of(100), {"Content-Length": "100"}, chunked=False)
    assert warm.status == 401
    before = memory_kib(pid)
    headers = {"Content-Type": "application/json"} | ({} if chunked else {"Content-Length": str(ATTACK)})
    answer = send_streamed(port, "PUT", PUT, body_of(ATTACK), headers, chunked)
    after = memory_kib(pid)
    with capsys.disabled():
        rss, peak = (f"{before[k] / 1024:.1f} → {after[k] / 1024:.1f} MiB" for k in ("VmRSS", "VmHWM"))
        how = "chunked" if chunked else "with Content-Length"
        print(f"\n300 MB {how} without a token: {answer.status}, {answer.sent / MiB:.1f} MiB taken by the socket; "
              f"server RSS {rss}, peak {peak}")  # fmt: skip
    assert answer.status == 401, answer.head
    assert json.loads(answer.body)["detail"].startswith("missing bearer token")
    assert "connection: close" in answer.head.lower()
    assert answer.sent < 32 * MiB, "the server stopped reading: the socket's buffers took the rest"
    assert after["VmHWM"] - before["VmHWM"] < 4 * 1024, (before, after)
    assert after["VmRSS"] - before["VmRSS"] < 4 * 1024, (before, after)


def test_a_bogus_token_with_a_big_body_is_refused_unread(apart: tuple[int, int]) -> None:
    port, pid = apart
    before = memory_kib(pid)
    headers = {"Authorization": "Bearer bogus", "Content-Length": str(50 * MiB)}
    answer = send_streamed(port, "POST", POST_V2, body_of(50 * MiB), headers, chunked=False)
    assert answer.status == 401, answer.head
    assert json.loads(answer.body) == {
        "success": False, "code": 1, "data": None,
        "message": "the bearer token was not accepted by the Kubernetes API server; the body was not read",
    }  # fmt: skip
    assert memory_kib(pid)["VmHWM"] - before["VmHWM"] < 4 * 1024


@pytest.fixture
def backend_() -> CountingBackend:
    return standard_backend()


@pytest.fixture
def port(backend_: CountingBackend) -> Iterator[int]:
    settings = ServerSettings(max_body_bytes=64 * 1024, token_reviews_per_second=5)
    with served(create_app(settings, backend_)) as p:
        yield p


def test_malformed_json_without_a_token_is_401_not_400(port: int) -> None:
    for path in (PUT, POST_V2):
        resp = httpx.request("PUT" if path == PUT else "POST", f"http://127.0.0.1:{port}{path}", content=b"{nope")
        assert resp.status_code == 401, resp.text
    resp = httpx.put(f"http://127.0.0.1:{port}{PUT}", content=b"{nope", headers={"Authorization": f"Bearer {ADMIN}"})
    assert resp.status_code == 400, resp.text  # with a token, the body is read and its error named


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_an_authenticated_body_over_the_bound_is_413(port: int, backend_: CountingBackend, chunked: bool) -> None:
    size = 64 * 1024 + 1
    headers = {"Authorization": f"Bearer {ADMIN}"} | ({} if chunked else {"Content-Length": str(size)})
    answer = send_streamed(port, "PUT", PUT, body_of(size, 16 * 1024), headers, chunked)
    assert answer.status == 413, answer.head
    assert "over the di-server's bound of 65536 bytes (max_body_bytes)" in json.loads(answer.body)["detail"]
    assert backend_.scale_calls == 0
    within = send_streamed(
        port, "PUT", PUT, [b'{"replicas": 3}'],
        {"Authorization": f"Bearer {ADMIN}", "Connection": "close", "Content-Type": "application/json"}
        | ({} if chunked else {"Content-Length": "15"}),
        chunked,
    )  # fmt: skip
    assert within.status == 200 and json.loads(within.body)["replicas"]["collector"] == 3, within.body


def test_distinct_bogus_tokens_past_the_budget_get_429_and_cost_no_more_reviews(
    port: int, backend_: CountingBackend
) -> None:
    url = f"http://127.0.0.1:{port}/v1/namespaces/team-a/dijobs/dqn"
    with httpx.Client() as http:
        assert http.get(url, headers={"Authorization": f"Bearer {ADMIN}"}).status_code == 200  # remembered now
        codes = [http.get(url, headers={"Authorization": f"Bearer bogus-{i}"}).status_code for i in range(60)]
        refused = http.get(url, headers={"Authorization": "Bearer bogus-x"})
        bodied = http.put(f"http://127.0.0.1:{port}{PUT}", json={"replicas": 3},
                          headers={"Authorization": "Bearer bogus-y"})  # fmt: skip
        remembered = http.get(url, headers={"Authorization": f"Bearer {ADMIN}"})
    # a burst of 10 (twice the rate of 5 a second), then a few more as the test's seconds pass
    assert codes[:9] == [401] * 9 and codes.count(429) >= 40, codes
    assert backend_.token_reviews <= 1 + 10 + 5, backend_.token_reviews
    assert refused.status_code == 429 and int(refused.headers["Retry-After"]) >= 1
    assert "at most 5 a second" in refused.json()["detail"]
    assert bodied.status_code == 429 and "Retry-After" in bodied.headers  # the body gate asks the same budget
    assert remembered.status_code == 200  # a remembered token is never refused


class _Failing(CountingBackend):
    def scale(self, namespace: str, name: str, request: ScaleRequest) -> object:  # type: ignore[override]
        err = ApiException(status=500, reason="Internal Server Error")
        err.headers = {"Audit-Id": "audit-1234", "X-Kubernetes-Pf-Flowschema-Uid": "uid-5678"}
        err.body = '{"kind":"Status","message":"etcdserver: leader changed, secret value 42"}'
        raise err


def test_a_500_says_what_failed_in_one_line_without_the_api_servers_answer(caplog: pytest.LogCaptureFixture) -> None:
    backend = _Failing()
    backend.jobs = standard_backend().jobs
    with served(create_app(ServerSettings(), backend)) as p:
        auth = {"Authorization": f"Bearer {ADMIN}"}
        resp = httpx.put(f"http://127.0.0.1:{p}{PUT}", json={"replicas": 3}, headers=auth)
    assert resp.status_code == 500
    detail = resp.json()["detail"]
    assert detail == (
        "internal error: the Kubernetes API server answered 500 Internal Server Error "
        "(the di-server's log has the details)"
    )
    for leaked in ("audit-1234", "uid-5678", "etcdserver", "secret value", "HTTP response"):
        assert leaked not in resp.text
    assert "audit-1234" in caplog.text  # the log keeps it, for the operator


def test_docs_and_redoc_are_not_served_and_the_schema_is(port: int) -> None:
    for path in ("/docs", "/redoc", "/docs/oauth2-redirect"):
        assert httpx.get(f"http://127.0.0.1:{port}{path}").status_code == 404, path
    schema = httpx.get(f"http://127.0.0.1:{port}/openapi.json")
    assert schema.status_code == 200 and "cdn" not in schema.text.lower()


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.1.2.3", "dihera-server", "localhost.evil.example"])
def test_no_auth_is_refused_off_loopback(host: str) -> None:
    args = build_parser().parse_args(["server", "--plain-http", "--no-auth", "--host", host])
    with pytest.raises(ValueError, match=rf"auth: off \(--no-auth\) while listening on '{host}'"):
        settings_from_args(args, {})
    with pytest.raises(ValueError, match="--no-auth"):
        settings_from_args(build_parser().parse_args(["server", "--plain-http", "--no-auth"]),
                           {"DIHERA_BIND_ADDRESS": host})  # fmt: skip


@pytest.mark.parametrize("host", ["127.0.0.1", "127.8.9.10", "::1", "[::1]", "localhost", "LOCALHOST"])
def test_no_auth_is_accepted_on_loopback(host: str) -> None:
    assert is_loopback(host)
    args = build_parser().parse_args(["server", "--plain-http", "--no-auth", "--host", host])
    assert settings_from_args(args, {}).auth is False


def test_the_bounds_are_checked() -> None:
    with pytest.raises(ValueError, match="max_body_bytes: 0 is not a positive") as err:
        ServerSettings(max_body_bytes=0, token_reviews_per_second=-1)
    assert "token_reviews_per_second: -1 is negative" in str(err.value)
