"""The di-server's RL report route (POST /v2alpha1/job/{id}/training) and the per-job store that writes
status.training at most once a second (dihera/server/training.py)."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from dihera.server import ServerSettings, create_app
from dihera.server.training import MAX_EVALUATIONS, MAX_REPLICAS, TooManyReplicas, TrainingReports
from dihera.shapes.training import TrainingStatus
from tests.unit.fake_backend import ADMIN, POD, POD_NAME, POD_UID, REPORTER, VIEWER, FakeBackend

URL = "/v2alpha1/job/team-a.dqn/training"


def _http(backend: FakeBackend, token: str = ADMIN) -> TestClient:
    return TestClient(create_app(ServerSettings(), backend), headers={"Authorization": f"Bearer {token}"})


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Store:
    """One DIJob's status.training, as the cache holds it, and every write."""

    def __init__(self, uid: str = "u1") -> None:
        self.uid: str | None = uid
        self.training: TrainingStatus | None = None
        self.writes: list[TrainingStatus] = []

    def cached(self, namespace: str, name: str) -> tuple[str, TrainingStatus | None] | None:
        return None if self.uid is None else (self.uid, self.training)

    def write(self, namespace: str, name: str, uid: str, training: TrainingStatus) -> bool:
        if uid != self.uid:
            return False
        self.writes.append(training)
        self.training = training
        return True


def _reports(store: Store, clock: Clock) -> TrainingReports:
    return TrainingReports(store.cached, store.write, clock=clock, wall=clock, background=False)


def test_twenty_reports_in_one_second_make_one_write() -> None:
    store, clock = Store(), Clock()
    reports = _reports(store, clock)
    for i in range(20):
        reports.add("ns", "j", "u1", "collector", f"c{i % 4}", {"envStepsPerSecond": 10.0, "envSteps": float(i)})
        reports.flush()
        clock.now += 0.05
    assert len(store.writes) == 1  # the first, at once; the rest wait for the interval
    assert reports.flush() > 0 and len(store.writes) == 1
    clock.now += 1.0
    reports.flush()
    assert len(store.writes) == 2 and store.writes[-1]["envStepsPerSecond"] == 40.0
    reports.flush()
    assert len(store.writes) == 2  # nothing new: nothing written


def test_one_process_with_every_role_keeps_each_roles_figures() -> None:
    # DI-engine's stock main in one process (or its serial pipeline): one pod reports as learner, collector and
    # evaluator; each role's newest report counts (measured on the real node: one role's figures were lost)
    store, clock = Store(), Clock()
    reports = _reports(store, clock)
    reports.add("ns", "j", "u1", "learner", "pod-0", {"iteration": 40.0, "iterationsPerSecond": 20.0})
    reports.add("ns", "j", "u1", "collector", "pod-0", {"envSteps": 512.0, "envStepsPerSecond": 100.0})
    reports.add("ns", "j", "u1", "evaluator", "pod-0", {"iteration": 40.0, "return": 9.5})
    reports.flush()
    written = store.writes[-1]
    assert written["iteration"] == 40 and written["iterationsPerSecond"] == 20.0, written
    assert written["envSteps"] == 512 and written["envStepsPerSecond"] == 100.0, written
    assert written["evaluation"]["value"] == 9.5, written


def test_the_status_written_before_carries_the_best_and_evaluations_are_counted_once() -> None:
    store, clock = Store(), Clock()
    store.training = {"evaluation": {"value": 10.0, "iteration": 1, "best": 90.0, "bestIteration": 1, "count": 3}}
    reports = _reports(store, clock)
    reports.add("ns", "j", "u1", "evaluator", "e", {"iteration": 40, "return": 50.0})
    reports.add("ns", "j", "u1", "evaluator", "e", {"iteration": 50, "return": 95.0})
    reports.flush()
    assert store.writes[-1]["evaluation"] == {"value": 95.0, "iteration": 50, "best": 95.0, "bestIteration": 50,
                                              "count": 5}  # fmt: skip
    clock.now += 2
    reports.add("ns", "j", "u1", "learner", "l", {"iteration": 60})
    reports.flush()
    assert store.writes[-1]["evaluation"]["count"] == 5


def test_a_job_gone_or_created_again_is_forgotten() -> None:
    store, clock = Store(), Clock()
    reports = _reports(store, clock)
    reports.add("ns", "j", "u1", "learner", "l", {"iteration": 1})
    store.uid = "u2"  # deleted and created again under the name
    reports.flush()
    assert store.writes == [] and reports.jobs() == 0
    reports.add("ns", "j", "u2", "learner", "l", {"iteration": 1})
    store.uid = None
    reports.flush()
    assert store.writes == [] and reports.jobs() == 0


def test_a_failed_write_is_tried_again_with_its_evaluations() -> None:
    store, clock = Store(), Clock()
    calls = {"n": 0}

    def flaky(namespace: str, name: str, uid: str, training: TrainingStatus) -> bool:
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("API server away")
        return store.write(namespace, name, uid, training)

    reports = TrainingReports(store.cached, flaky, clock=clock, wall=clock, background=False)
    reports.add("ns", "j", "u1", "evaluator", "e", {"iteration": 3, "return": 7.0})
    reports.flush()
    clock.now += 1
    reports.flush()
    assert store.writes[-1]["evaluation"]["count"] == 1


def test_replicas_and_waiting_evaluations_are_bounded() -> None:
    store, clock = Store(), Clock()
    reports = _reports(store, clock)
    for i in range(MAX_REPLICAS):
        reports.add("ns", "j", "u1", "collector", f"c{i}", {"envSteps": 1.0})
    with pytest.raises(TooManyReplicas):
        reports.add("ns", "j", "u1", "collector", "one-more", {"envSteps": 1.0})
    clock.now += 61  # every replica silent past the stale bound: room again
    reports.add("ns", "j", "u1", "collector", "one-more", {"envSteps": 1.0})
    for i in range(3 * MAX_EVALUATIONS):
        reports.add("ns", "j", "u1", "evaluator", "e", {"iteration": float(i), "return": 1.0})
    reports.flush()
    assert store.writes[-1]["evaluation"]["count"] == MAX_EVALUATIONS


def test_a_report_is_accepted_and_written_within_a_second(backend: FakeBackend) -> None:
    http = _http(backend)
    resp = http.post(URL, json={"role": "learner", "iteration": 12, "iterationsPerSecond": 3.5})
    assert resp.status_code == 202, resp.text
    assert resp.json() == {"success": True, "code": 0, "message": "accepted", "data": None}
    http.app.state.dihera.training.flush()  # type: ignore[attr-defined]
    training = backend.jobs[("team-a", "dqn")]["body"]["status"]["training"]
    assert training["iteration"] == 12 and training["iterationsPerSecond"] == 3.5


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"role": "learner", "envSteps": 3}, "body: envSteps not figures of a learner"),
        ({"role": "trainer"}, "role"),
        ({"role": "learner", "lr": 0.1}, "lr"),
        ({"role": "collector", "envSteps": "many"}, "envSteps"),
        ({"role": "learner", "replica": "x" * 300}, "replica"),
    ],
    ids=["foreign-figure", "unknown-role", "unknown-field", "not-a-number", "long-replica"],
)
def test_a_bad_report_is_refused_naming_the_field(backend: FakeBackend, body: dict[str, Any], expected: str) -> None:
    resp = _http(backend).post(URL, json=body)
    assert resp.status_code in (400, 422), resp.text
    assert expected in resp.text
    assert backend.training_writes == [] and _http(backend).app.state.dihera.training.jobs() == 0  # type: ignore[attr-defined]


def test_the_report_right_is_asked_and_a_viewer_may_not_report(backend: FakeBackend) -> None:
    assert _http(backend, REPORTER).post(URL, json={"role": "learner", "iteration": 1}).status_code == 202
    assert backend.reviews == [(REPORTER, "create", "team-a", "dqn", "profilings")]
    http = _http(backend, VIEWER)
    assert http.post(URL, json={"role": "learner", "iteration": 1}).status_code == 403
    assert http.app.state.dihera.training.jobs() == 0  # type: ignore[attr-defined]
    anonymous = TestClient(create_app(ServerSettings(), backend))
    assert anonymous.post(URL, json={"role": "learner", "iteration": 1}).status_code == 401


def test_a_pods_token_reports_as_its_pod_and_only_into_its_own_job(backend: FakeBackend) -> None:
    backend.jobs[("team-a", "dqn")]["pods"] = [{"metadata": {"name": POD_NAME, "uid": POD_UID}}]
    http = _http(backend, POD)
    for replica in ("a", "b", "c"):  # the body's replica is ignored: one pod, one entry
        body = {"role": "collector", "replica": replica, "envSteps": 10, "envStepsPerSecond": 5.0}
        assert http.post(URL, json=body).status_code == 202
    http.app.state.dihera.training.flush()  # type: ignore[attr-defined]
    assert backend.jobs[("team-a", "dqn")]["body"]["status"]["training"]["envSteps"] == 10
    other = http.post("/v2alpha1/job/team-a.serial/training", json={"role": "learner", "iteration": 1})
    assert other.status_code == 403 and "is not a replica of DIJob team-a/serial" in other.text


def test_an_unknown_job_is_404_and_costs_no_memory(backend: FakeBackend) -> None:
    http = _http(backend)
    assert http.post("/v2alpha1/job/team-a.nope/training", json={"role": "learner"}).status_code == 404
    assert http.app.state.dihera.training.jobs() == 0  # type: ignore[attr-defined]
