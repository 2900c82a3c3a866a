"""Remembered reads (dihera.server.fastpath): a repeated GET gets the full path's exact answer without the
framework, and only when the answer, the token's review and its right are all remembered."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from dihera.server import ServerSettings, create_app
from dihera.server.fastpath import RememberedReads
from tests.unit.fake_backend import ADMIN, VIEWER, FakeBackend

ROUTES = {  # a path → the route FastAPI labels its requests with
    "/v2alpha1/job/team-a.dqn/replicas": "/v2alpha1/job/{job_id}/replicas",
    "/v1/namespaces/team-a/dijobs/dqn": "/v1/namespaces/{namespace}/dijobs/{name}",
    "/v1/namespaces/team-a/dijobs/dqn/replicas": "/v1/namespaces/{namespace}/dijobs/{name}/replicas",
}
READS = list(ROUTES)


def fast_path(app: FastAPI) -> RememberedReads:
    """The middleware instance in the app's stack (built by the first request)."""
    layer: Any = app.middleware_stack
    while not isinstance(layer, RememberedReads):
        layer = layer.app
    return layer


def exchange(http: TestClient, path: str, token: str | None = ADMIN) -> tuple[int, list[tuple[str, str]], bytes]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    resp = http.get(path, headers=headers)
    return resp.status_code, sorted(resp.headers.items()), resp.content


@pytest.fixture
def app(backend: FakeBackend) -> FastAPI:
    return create_app(ServerSettings(), backend)


@pytest.mark.parametrize("path", READS)
def test_a_repeated_read_is_served_remembered_byte_for_byte(app: FastAPI, path: str) -> None:
    http = TestClient(app)
    first = exchange(http, path)
    assert first[0] == 200
    reads = fast_path(app)
    assert reads.served == 0  # the first answer is the full path's
    assert exchange(http, path) == first
    assert reads.served == 1
    text = http.get("/metrics").text  # counted under FastAPI's route, like the first
    route = ROUTES[path]
    assert f'dihera_server_requests_total{{code="200",method="GET",route="{route}"}} 2.0' in text


def test_a_changed_job_is_answered_anew(app: FastAPI, backend: FakeBackend) -> None:
    http = TestClient(app)
    path = "/v1/namespaces/team-a/dijobs/dqn/replicas"
    before = exchange(http, path)
    http.put(
        "/v1/namespaces/team-a/dijobs/dqn/tasks/collector/replicas",
        json={"replicas": 3},
        headers={"Authorization": f"Bearer {ADMIN}"},
    )
    after = exchange(http, path)
    assert fast_path(app).served == 0 and after != before
    assert len(after[2]) > len(before[2])  # a third collector's row
    assert exchange(http, path) == after and fast_path(app).served == 1


def test_what_is_not_remembered_goes_through_the_full_checks(app: FastAPI, backend: FakeBackend) -> None:
    http = TestClient(app)
    path = READS[0]
    assert exchange(http, path)[0] == 200  # remembered for ADMIN
    assert exchange(http, path, token=None)[0] == 401  # no token
    assert exchange(http, path, token="stolen")[0] == 401  # unknown token, twice: rejected ones are never served
    assert exchange(http, path, token="stolen")[0] == 401
    assert http.get(path, headers={"Authorization": f"Basic {ADMIN}"}).status_code == 401  # not a bearer token
    query = http.get(f"{path}?x=1", headers={"Authorization": f"Bearer {ADMIN}"})  # any query: the full path
    assert query.status_code == 200
    assert exchange(http, "/v2alpha1/job/team-a.nope/replicas")[0] == 404
    assert exchange(http, "/v2alpha1/job/team-a.nope/replicas")[0] == 404
    assert exchange(http, "/v2alpha1/job/Team-A.dqn/replicas")[0] in (400, 422)  # refused by FastAPI
    del backend.jobs[("team-a", "dqn")]
    assert exchange(http, path)[0] == 404  # gone from the cache: not served from a remembered answer
    assert fast_path(app).served == 0


def test_a_viewer_is_served_only_reads_it_was_allowed(backend: FakeBackend) -> None:
    app = create_app(ServerSettings(), backend)
    http = TestClient(app)
    path = READS[1]
    assert exchange(http, path, token=VIEWER)[0] == 200
    assert exchange(http, path, token=VIEWER)[0] == 200
    assert fast_path(app).served == 1
    # the answer is remembered for ADMIN's first request too, but ADMIN's rights are not yet: full path
    assert exchange(http, path, token=ADMIN)[0] == 200
    assert fast_path(app).served == 1


def test_a_namespace_the_server_does_not_watch_is_never_served(backend: FakeBackend) -> None:
    app = create_app(ServerSettings(namespaces=("team-b",)), backend)
    http = TestClient(app)
    for _ in range(2):
        assert exchange(http, READS[2])[0] == 404
    assert fast_path(app).served == 0


def test_without_auth_a_repeated_read_is_served(backend: FakeBackend) -> None:
    app = create_app(ServerSettings(auth=False), backend)
    http = TestClient(app)
    first = exchange(http, READS[2], token=None)
    assert first[0] == 200 and exchange(http, READS[2], token=None) == first
    assert fast_path(app).served == 1
