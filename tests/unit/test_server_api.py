"""The di-server's HTTP API over an in-memory backend that plans with the real scaling code."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from dihera.profilings import MAX_KEYS, MAX_REPORT_KEYS, MAX_VALUE_BYTES
from dihera.server import ServerSettings, create_app
from tests.unit.fake_backend import ADMIN, POD, POD_NAME, POD_UID, REPORTER, VIEWER, FakeBackend


@pytest.fixture
def http(backend: FakeBackend) -> TestClient:
    return TestClient(create_app(ServerSettings(), backend), headers={"Authorization": f"Bearer {ADMIN}"})


def test_health_readiness_and_openapi(http: TestClient) -> None:
    assert http.get("/healthz").json() == {"status": "ok"}
    assert http.get("/readyz").status_code == 200
    paths = http.get("/openapi.json").json()["paths"]
    assert {
        "/v2alpha1/job/{job_id}/replicas",
        "/v1/namespaces/{namespace}/dijobs/{name}/replicas:remove",
        "/v1/namespaces/{namespace}/dijobs/{name}/tasks/{task}/replicas",
    } <= set(paths)


def test_v2_replicas_in_rank_order(http: TestClient) -> None:
    body = http.get("/v2alpha1/job/team-a.dqn/replicas").json()
    assert body["success"] is True and body["code"] == 0
    assert body["data"] == [
        f"dqn-{r}.di-dqn.team-a.svc.cluster.local" for r in ("learner-0", "collector-0", "collector-1")
    ]


def test_v2_job_id_splits_on_the_first_dot(http: TestClient) -> None:
    resp = http.get("/v2alpha1/job/team-a.dqn.v2/replicas")
    assert resp.status_code == 404 and resp.json()["message"] == "DIJob team-a/dqn.v2 not found"


def test_v2_add_and_remove_scale_the_collector_task(http: TestClient, backend: FakeBackend) -> None:
    added = http.post("/v2alpha1/job/team-a.dqn/replicas", json={"replicas": 2}).json()
    assert added["success"] is True
    assert [r["name"] for r in added["data"]["added"]] == ["collector-2", "collector-3"]
    removed = http.request("DELETE", "/v2alpha1/job/team-a.dqn/replicas", json={"replicas": 3}).json()
    assert removed["data"]["removed"] == ["collector-1", "collector-2", "collector-3"]
    assert removed["data"]["replicas"] == {"learner": 1, "collector": 1}
    learner = http.post("/v2alpha1/job/team-a.dqn/replicas?task=learner", json={"replicas": 1}).json()
    assert learner["data"]["added"][0]["name"] == "learner-1"


def test_v1_summary_replicas_set_and_remove_named(http: TestClient) -> None:
    base = "/v1/namespaces/team-a/dijobs/dqn"
    out = http.put(f"{base}/tasks/collector/replicas", json={"replicas": 4}).json()
    assert out["membershipGeneration"] == 2 and out["replicas"] == {"learner": 1, "collector": 4}
    out = http.post(f"{base}/replicas:remove", json={"replicas": ["collector-0", "collector-2"]}).json()
    assert out["removed"] == ["collector-0", "collector-2"]
    rows = http.get(f"{base}/replicas").json()
    assert [(r["rank"], r["name"]) for r in rows] == [(0, "learner-0"), (2, "collector-1"), (4, "collector-3")]
    summary = http.get(base).json()
    assert summary["membershipGeneration"] == 3
    assert summary["tasks"][1] == {"name": "collector", "type": "collector", "replicas": 2, "specReplicas": 2}


ERRORS = [
    pytest.param(
        "GET", "/v1/namespaces/team-a/dijobs/nope", None, None, 404, "DIJob team-a/nope not found", id="unknown-job"
    ),
    pytest.param("GET", "/v2alpha1/job/nodot/replicas", None, None, 400, "must be <namespace>.<name>", id="bad-id"),
    pytest.param(
        "PUT",
        "/v1/namespaces/team-a/dijobs/dqn/tasks/collector/replicas",
        {"replicas": 9},
        None,
        400,
        "outside its bounds (minReplicas=2, maxReplicas=6)",
        id="above-max",
    ),
    pytest.param(
        "PUT",
        "/v1/namespaces/team-a/dijobs/dqn/tasks/replay/replicas",
        {"replicas": 2},
        None,
        404,
        "no task 'replay'",
        id="unknown-task",
    ),
    pytest.param(
        "PUT",
        "/v1/namespaces/team-a/dijobs/dqn/tasks/collector/replicas",
        {"replicas": "3"},
        None,
        400,
        "body.replicas: Input should be a valid integer",
        id="string-count",
    ),
    pytest.param(
        "PUT",
        "/v1/namespaces/team-a/dijobs/dqn/tasks/collector/replicas",
        {"replicas": 3, "namespace": "kube-system"},
        None,
        400,
        "body.namespace: Extra inputs",
        id="namespace-in-body",
    ),
    pytest.param(
        "POST",
        "/v1/namespaces/team-a/dijobs/dqn/replicas:remove",
        {"replicas": ["collector-9"]},
        None,
        404,
        "no live replica named 'collector-9'",
        id="unknown-replica",
    ),
    pytest.param(
        "POST",
        "/v2alpha1/job/team-a.serial/replicas",
        {"replicas": 1},
        None,
        400,
        "job has no collector task; pass ?task=NAME (tasks: serial)",
        id="no-collector",
    ),
    pytest.param(
        "PUT",
        "/v1/namespaces/team-a/dijobs/dqn/tasks/collector/replicas",
        {"replicas": 3},
        "",
        401,
        "missing bearer token",
        id="no-token",
    ),
    pytest.param(
        "PUT",
        "/v1/namespaces/team-a/dijobs/dqn/tasks/collector/replicas",
        {"replicas": 3},
        "forged",
        401,
        "not accepted",
        id="bad-token",
    ),
    pytest.param(
        "PUT",
        "/v1/namespaces/team-a/dijobs/dqn/tasks/collector/replicas",
        {"replicas": 3},
        VIEWER,
        403,
        "viewer may not patch dijobs.diengine.opendilab.org in namespace team-a",
        id="not-allowed",
    ),
    pytest.param(
        "PUT",
        "/v1/namespaces/team-a/dijobs/dqn/tasks/collector/replicas",
        {"replicas": "x"},
        "",
        401,
        "missing bearer token",
        id="no-token-before-body",
    ),
]


@pytest.mark.parametrize(("method", "path", "body", "token", "status", "message"), ERRORS)
def test_errors_are_clear_and_change_nothing(
    http: TestClient,
    backend: FakeBackend,
    method: str,
    path: str,
    body: Any,
    token: str | None,
    status: int,
    message: str,
) -> None:
    before = {k: v["configmap"]["data"]["membership.json"] for k, v in backend.jobs.items()}
    headers = {} if token is None else {"Authorization": f"Bearer {token}" if token else ""}
    resp = http.request(method, path, json=body, headers=headers)
    assert resp.status_code == status, resp.text
    answer = resp.json()
    text = answer["message"] if path.startswith("/v2alpha1") else answer["detail"]
    assert message in text
    if path.startswith("/v2alpha1"):
        assert answer["success"] is False and answer["code"] == 1
    assert {k: v["configmap"]["data"]["membership.json"] for k, v in backend.jobs.items()} == before


def test_a_viewer_may_read(http: TestClient) -> None:
    resp = http.get("/v1/namespaces/team-a/dijobs/dqn", headers={"Authorization": f"Bearer {VIEWER}"})
    assert resp.status_code == 200 and resp.json()["name"] == "dqn"


def test_an_idempotency_key_scales_once(http: TestClient, backend: FakeBackend) -> None:
    path = "/v2alpha1/job/team-a.dqn/replicas"
    first = http.post(path, json={"replicas": 1}, headers={"Idempotency-Key": "k1"})
    again = http.post(path, json={"replicas": 1}, headers={"Idempotency-Key": "k1"})
    assert first.json() == again.json()
    assert backend.scale_calls == 1
    other = http.post(path, json={"replicas": 2}, headers={"Idempotency-Key": "k1"})
    assert other.status_code == 409 and "already used for a different request" in other.json()["message"]
    assert http.post(path, json={"replicas": 1}).status_code == 200
    assert backend.scale_calls == 2


def test_profilings_are_recorded(http: TestClient, backend: FakeBackend) -> None:
    resp = http.post("/v2alpha1/job/team-a.dqn/profilings", json={"fps": 120})
    assert resp.json()["success"] is True
    assert backend.profilings[("team-a", "dqn")] == {"fps": 120}
    http.post("/v2alpha1/job/team-a.dqn/profilings", json={"fps": None, "checkpoint": {"iteration": 3}})
    assert backend.jobs[("team-a", "dqn")]["body"]["status"]["profilings"] == {"checkpoint": {"iteration": 3}}


def test_a_report_needs_create_on_dijobs_profilings_and_that_right_scales_nothing(backend: FakeBackend) -> None:
    """The guard asks SubjectAccessReview for ``create`` on ``dijobs/profilings`` (not ``patch`` on DIJobs); a
    caller with only that right reports, and may neither scale nor read."""
    http = TestClient(
        create_app(ServerSettings(auth_cache_seconds=0.0), backend), headers={"Authorization": f"Bearer {REPORTER}"}
    )
    report = http.post("/v2alpha1/job/team-a.dqn/profilings", json={"evalReturn": 1.5})
    assert report.status_code == 200, report.text
    assert backend.reviews == [(REPORTER, "create", "team-a", "dqn", "profilings")]
    assert backend.jobs[("team-a", "dqn")]["body"]["status"]["profilings"] == {"evalReturn": 1.5}
    refused = [
        http.post("/v2alpha1/job/team-a.dqn/replicas", json={"replicas": 1}),
        http.request("DELETE", "/v2alpha1/job/team-a.dqn/replicas", json={"replicas": 1}),
        http.put("/v1/namespaces/team-a/dijobs/dqn/tasks/collector/replicas", json={"replicas": 3}),
        http.post("/v1/namespaces/team-a/dijobs/dqn/replicas:remove", json={"replicas": ["collector-0"]}),
        http.get("/v1/namespaces/team-a/dijobs/dqn"),
    ]
    assert [r.status_code for r in refused] == [403] * 5, [r.text for r in refused]
    assert backend.scale_calls == 0
    assert {r[1:] for r in backend.reviews[1:]} == {("patch", "team-a", "dqn", ""), ("get", "team-a", "dqn", "")}


def test_a_pods_own_token_reports_only_into_its_own_job(backend: FakeBackend) -> None:
    """A token bound to a pod (its TokenReview names the pod) reports into the DIJob the pod is a replica of, and
    not into another job of the namespace, though its ServiceAccount may report there."""
    http = TestClient(create_app(ServerSettings(), backend), headers={"Authorization": f"Bearer {POD}"})
    backend.jobs[("team-a", "dqn")]["pods"] = [{"metadata": {"name": POD_NAME, "uid": POD_UID}}]
    backend.jobs[("team-a", "serial")]["pods"] = [{"metadata": {"name": "serial-serial-0-99", "uid": "u"}}]
    assert http.post("/v2alpha1/job/team-a.dqn/profilings", json={"fps": 1}).status_code == 200
    other = http.post("/v2alpha1/job/team-a.serial/profilings", json={"fps": 666})
    assert other.status_code == 403
    assert other.json()["message"] == (
        f"pod team-a/{POD_NAME} is not a replica of DIJob team-a/serial: a pod's token reports only into its own "
        "job's status (DI_JOB_ID)"
    )
    assert "profilings" not in backend.jobs[("team-a", "serial")]["body"]["status"]
    # a pod of the same name that is not the token's (another uid: the pod was replaced) is not it either
    backend.jobs[("team-a", "dqn")]["pods"] = [{"metadata": {"name": POD_NAME, "uid": "uid-new"}}]
    assert http.post("/v2alpha1/job/team-a.dqn/profilings", json={"fps": 2}).status_code == 403


def test_a_viewer_may_not_report(backend: FakeBackend) -> None:
    http = TestClient(create_app(ServerSettings(), backend), headers={"Authorization": f"Bearer {VIEWER}"})
    resp = http.post("/v2alpha1/job/team-a.dqn/profilings", json={"fps": 1})
    assert resp.status_code == 403
    assert resp.json() == {
        "success": False,
        "code": 1,
        "message": "viewer may not create dijobs.diengine.opendilab.org/profilings in namespace team-a "
        "(a role granting it: the chart's ClusterRole <fullname>-reporter)",
        "data": None,
    }
    assert ("team-a", "dqn") not in backend.profilings


@pytest.mark.parametrize(
    ("body", "message"),
    [
        pytest.param({f"k{i}": i for i in range(MAX_REPORT_KEYS + 1)}, "keys, more than", id="keys"),
        pytest.param({"bad key": 1}, "body key 'bad key': must match ^[A-Za-z]", id="name"),
        pytest.param({"v": "x" * MAX_VALUE_BYTES}, f"status.profilings.v: {MAX_VALUE_BYTES + 2} bytes", id="value"),
        pytest.param({"v": [[[[[[[[[1]]]]]]]]]}, "status.profilings.v: nests lists and objects deeper", id="depth"),
    ],
)
def test_a_report_past_a_bound_is_refused_in_the_envelope(
    http: TestClient, backend: FakeBackend, body: dict[str, Any], message: str
) -> None:
    resp = http.post("/v2alpha1/job/team-a.dqn/profilings", json=body)
    assert resp.status_code == 400
    answer = resp.json()
    assert answer["success"] is False and answer["code"] == 1 and message in answer["message"], answer
    assert ("team-a", "dqn") not in backend.profilings


def test_the_merged_profilings_are_bounded(http: TestClient, backend: FakeBackend) -> None:
    """Reports each within bounds, together past the map's key bound: the one that would cross it is refused."""
    path = "/v2alpha1/job/team-a.dqn/profilings"
    for start in range(0, MAX_KEYS, MAX_REPORT_KEYS):
        resp = http.post(path, json={f"k{i}": i for i in range(start, start + MAX_REPORT_KEYS)})
        assert resp.status_code == 200, resp.text
    over = http.post(path, json={"one_more": 1})
    assert over.status_code == 400
    assert over.json()["message"] == (
        f"status.profilings: would hold {MAX_KEYS + 1} keys, more than {MAX_KEYS} "
        f"(it holds {MAX_KEYS}; a null value removes a key)"
    )
    assert http.post(path, json={"k0": None, "one_more": 1}).status_code == 200
    assert len(backend.jobs[("team-a", "dqn")]["body"]["status"]["profilings"]) == MAX_KEYS


def test_metrics_count_requests_and_scale_operations(http: TestClient) -> None:
    http.put("/v1/namespaces/team-a/dijobs/dqn/tasks/collector/replicas", json={"replicas": 3})
    http.put("/v1/namespaces/team-a/dijobs/dqn/tasks/collector/replicas", json={"replicas": 30})
    text = http.get("/metrics").text
    route = "/v1/namespaces/{namespace}/dijobs/{name}/tasks/{task}/replicas"
    assert f'dihera_server_requests_total{{code="200",method="PUT",route="{route}"}} 1.0' in text
    assert f'dihera_server_requests_total{{code="400",method="PUT",route="{route}"}} 1.0' in text
    assert 'dihera_server_scale_operations_total{action="set",outcome="scaled"} 1.0' in text
    assert 'dihera_server_scale_operations_total{action="set",outcome="refused"} 1.0' in text
    assert "dihera_server_request_seconds_bucket" in text


def test_without_auth_no_token_is_needed(backend: FakeBackend) -> None:
    http = TestClient(create_app(ServerSettings(auth=False), backend))
    assert http.get("/v1/namespaces/team-a/dijobs/dqn/replicas").status_code == 200


def test_a_namespace_the_server_does_not_watch_is_not_found(backend: FakeBackend) -> None:
    http = TestClient(
        create_app(ServerSettings(namespaces=("team-b",)), backend), headers={"Authorization": f"Bearer {ADMIN}"}
    )
    resp = http.put("/v1/namespaces/team-a/dijobs/dqn/tasks/collector/replicas", json={"replicas": 3})
    assert resp.status_code == 404
    assert resp.json()["detail"] == "DIJob team-a/dqn not found: this di-server serves team-b only"
    assert backend.scale_calls == 0


def test_tokens_are_never_logged(backend: FakeBackend, caplog: pytest.LogCaptureFixture) -> None:
    """Every request path the di-server logs on (a write, a refused token, a denied caller, a bad request, a
    missing job), at debug level: no record holds a bearer token (issue 42)."""
    caplog.set_level("DEBUG")
    http = TestClient(create_app(ServerSettings(log_level="debug", auth_cache_seconds=0.0), backend))
    secret = "s3cr3t-bearer-token-value"
    for token in (ADMIN, VIEWER, secret):
        auth = {"Authorization": f"Bearer {token}", "Idempotency-Key": f"k-{token}"}
        http.put("/v1/namespaces/team-a/dijobs/dqn/tasks/collector/replicas", json={"replicas": 3}, headers=auth)
        http.put("/v1/namespaces/team-a/dijobs/dqn/tasks/collector/replicas", json={"replicas": -1}, headers=auth)
        http.get("/v1/namespaces/team-a/dijobs/nope", headers=auth)
        http.post("/v2alpha1/job/team-a.dqn/profilings", json={"evalReturn": 1.0}, headers=auth)
    logged = [r.getMessage() + repr(r.args) + repr(getattr(r, "__dict__", {})) for r in caplog.records]
    assert logged, "the requests logged nothing: the check would be empty"
    for token in (ADMIN, VIEWER, secret):
        assert not [line for line in logged if token in line], token
