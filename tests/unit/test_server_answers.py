"""Read answers reused while the cached objects they came from are the same objects; recomputed after a change."""

from __future__ import annotations

from fastapi.testclient import TestClient

from dihera.server import ServerSettings, create_app
from dihera.server.answers import AnswerCache, to_json
from dihera.server.models import Envelope, ReplicaOut
from tests.builders import job, task
from tests.unit.fake_backend import ADMIN, FakeBackend


class Counter:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> bytes:
        self.calls += 1
        return f"answer {self.calls}".encode()


def test_an_answer_is_reused_only_for_the_same_objects() -> None:
    cache, compute = AnswerCache(), Counter()
    body, configmap = {"metadata": {"name": "dqn"}}, {"data": {}}
    assert cache.get("k", (body, configmap), compute) == b"answer 1"
    assert cache.get("k", (body, configmap), compute) == b"answer 1"
    equal_but_new = {"data": {}}  # what the watch cache holds after an event: a new dict, even if equal
    assert cache.get("k", (body, equal_but_new), compute) == b"answer 2"
    assert cache.get("k", (body, equal_but_new, {"pod": 1}), compute) == b"answer 3"
    assert cache.get("other", (body, equal_but_new, {"pod": 1}), compute) == b"answer 4"
    assert compute.calls == 4 and len(cache) == 2  # one answer per key: an old version is replaced


def test_the_cache_keeps_at_most_size_keys() -> None:
    cache, compute, source = AnswerCache(size=2), Counter(), object()
    for key in "abc":
        cache.get(key, (source,), compute)
    assert len(cache) == 2
    assert cache.get("a", (source,), compute) == b"answer 4"  # the oldest went first


def test_to_json_is_what_fastapi_sends() -> None:
    row = ReplicaOut(name="learner-0", rank=0, task="learner", index=0, fqdn="x", pod=None, phase=None)
    assert to_json([row], ReplicaOut) == b'[{"name":"learner-0","rank":0,"task":"learner","index":0,"fqdn":"x",' \
        b'"pod":null,"phase":null}]'
    assert to_json(Envelope(success=True, code=0, message="", data=["a"])) == \
        b'{"success":true,"code":0,"message":"","data":["a"]}'


def test_a_scaled_job_answers_its_new_replicas() -> None:
    backend = FakeBackend()
    backend.add(job(task("learner"), task("collector", replicas=2), name="dqn", maxReplicas=6))
    http = TestClient(create_app(ServerSettings(), backend), headers={"Authorization": f"Bearer {ADMIN}"})
    paths = ["/v2alpha1/job/team-a.dqn/replicas", "/v1/namespaces/team-a/dijobs/dqn/replicas",
             "/v1/namespaces/team-a/dijobs/dqn"]
    before = [http.get(p).json() for p in paths]
    assert [http.get(p).json() for p in paths] == before
    scaled = http.put("/v1/namespaces/team-a/dijobs/dqn/tasks/collector/replicas", json={"replicas": 3})
    assert scaled.status_code == 200
    v2, rows, summary = [http.get(p).json() for p in paths]
    assert len(v2["data"]) == 4 and len(before[0]["data"]) == 3
    assert [r["name"] for r in rows] == ["learner-0", "collector-0", "collector-1", "collector-2"]
    assert summary["membershipGeneration"] == before[2]["membershipGeneration"] + 1
