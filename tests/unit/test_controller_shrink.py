"""The controller's side of shrink before eviction with in-memory doubles: the victims read from the cache, the
scale requests made, the annotation, the Events, the wait for Kueue's ClusterQueue, and the grow back."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from dihera.constants import ANNOTATION_SHRUNK_FROM
from dihera.controller.shrink import Shrinker
from dihera.queueing import build_workload
from dihera.scaling import ScaleRequest
from dihera.validation import load_job
from tests.builders import job, task
from tests.unit.jobviews import MEMBERSHIP, observe, running, status_after, workflow

NS = "ns"


def collector_job(name: str, collectors: int, preemptible: bool = True, annotations: Any = None) -> dict[str, Any]:
    one_cpu = [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}}}]
    body = job(
        task("learner", replicas=1, containers=one_cpu),
        task("collector", replicas=collectors, containers=one_cpu),
        name=name,
        preemptible=preemptible,
        priority="low",
    )
    body["metadata"].update(namespace=NS, uid=f"uid-{name}", labels={"kueue.x-k8s.io/queue-name": "q"})
    if annotations:
        body["metadata"]["annotations"] = dict(annotations)
    body["status"] = {"phase": "Running"}
    return body


def admitted(name: str, priority: int, cq: str = "cq") -> dict[str, Any]:
    return {
        "metadata": {"name": f"dijob-{name}", "namespace": NS, "labels": {"diengine/job": name}},
        "spec": {"priority": priority, "queueName": "q"},
        "status": {
            "admission": {"clusterQueue": cq},
            "conditions": [{"type": "QuotaReserved", "status": "True"}, {"type": "Admitted", "status": "True"}],
        },
    }


def cluster_queue(cpu: int, reserved: int) -> dict[str, Any]:
    res = [{"name": "cpu", "nominalQuota": str(cpu)}]
    return {
        "spec": {"resourceGroups": [{"flavors": [{"name": "f", "resources": res}]}]},
        "status": {"flavorsReservation": [{"name": "f", "resources": [{"name": "cpu", "total": str(reserved)}]}]},
    }


class Cluster:
    """The doubles: ClusterQueue ``cq`` (its reservation drops by what a scale-down gives back, the next
    read after the scale), the cached Workloads and DIJobs, the scale requests, the Events."""

    def __init__(self, quota: int, reserved: int, bodies: list[dict[str, Any]], workloads: list[dict[str, Any]]):
        self.quota, self.reserved = quota, reserved
        self.bodies = {b["metadata"]["name"]: b for b in bodies}
        self.workloads = workloads
        self.scaled: list[tuple[str, ScaleRequest]] = []
        self.events: list[tuple[str, str, str]] = []
        self.annotations: dict[str, str | None] = {}

    def local_queue(self, namespace: str, name: str) -> dict[str, Any] | None:
        return {"spec": {"clusterQueue": "cq"}} if name == "q" else None

    def cluster_queue(self, name: str) -> dict[str, Any] | None:
        return cluster_queue(self.quota, self.reserved) if name == "cq" else None

    def annotate_job(self, namespace: str, name: str, key: str, value: str | None) -> bool:
        self.annotations[name] = value
        return True

    def scale(self, namespace: str, name: str, request: ScaleRequest, *, update_spec: bool = True) -> None:
        self.scaled.append((name, request))
        before = next(
            t["replicas"] for t in self.bodies[name]["spec"]["tasks"] if t.get("name", t["type"]) == request.task
        )
        self.reserved -= before - request.count

    def post(self, body: Mapping[str, Any], type_: str, reason: str, message: str) -> None:
        self.events.append((body["metadata"]["name"], reason, message))

    def shrinker(self) -> Shrinker:
        return Shrinker(
            self,
            lambda: self.workloads,
            lambda ns, n: self.bodies.get(n),
            self,
            self.post,
            settle_wait=1.0,
            sleep=lambda s: None,
        )


def high_workload(collectors: int) -> tuple[Any, dict[str, Any]]:
    high = load_job(collector_job("high", collectors, preemptible=True))
    return high, build_workload(high, "q", "high", 300)


def test_collectors_are_given_back_before_the_workload_is_created() -> None:
    low = collector_job("low", 7)  # 8 of 8 CPUs
    cluster = Cluster(8, 8, [low], [admitted("low", 100)])
    high, wl = high_workload(3)  # 4 CPUs
    assert cluster.shrinker().make_room(high, wl, {}) is True
    assert cluster.scaled == [("low", ScaleRequest.set_replicas("collector", 3))]  # 4 given back, not 6
    assert json.loads(cluster.annotations["low"] or "") == {"collector": 7}
    reasons = [(job_name, reason) for job_name, reason, _ in cluster.events]
    assert reasons == [("low", "CollectorsShrunk"), ("high", "CollectorsShrunk")]
    assert "gave back 4 collector replica(s) (7 -> 3)" in cluster.events[0][2]
    assert "it lacked cpu 4" in cluster.events[0][2]
    assert cluster.reserved == 4


def test_not_enough_means_no_scale_and_kueue_decides() -> None:
    low = collector_job("low", 3)  # 4 of 4 CPUs; at most 2 can be given back
    cluster = Cluster(4, 4, [low], [admitted("low", 100)])
    high, wl = high_workload(3)
    assert cluster.shrinker().make_room(high, wl, {}) is False
    assert cluster.scaled == [] and cluster.events == [] and cluster.annotations == {}


def test_non_preemptible_equal_priority_and_other_queues_jobs_are_not_victims() -> None:
    keep = collector_job("keep", 7, preemptible=False)
    same = collector_job("same", 7)
    other = collector_job("other", 7)
    workloads = [admitted("keep", 100), admitted("same", 300), admitted("other", 100, cq="elsewhere")]
    cluster = Cluster(24, 24, [keep, same, other], workloads)
    high, wl = high_workload(3)
    assert cluster.shrinker().make_room(high, wl, {}) is False
    assert cluster.scaled == []


def test_a_shrunk_job_grows_back_when_the_quota_is_free() -> None:
    low = collector_job("low", 1, annotations={"diengine/shrunk-from": '{"collector":7}'})
    cluster = Cluster(8, 2, [low], [admitted("low", 100)])
    grown, retry = cluster.shrinker().grow_back(load_job(low), low, {})
    assert grown and retry is None
    assert cluster.scaled == [("low", ScaleRequest.set_replicas("collector", 7))]
    assert cluster.annotations["low"] is None  # back at its count: the annotation goes
    assert cluster.events[-1][1] == "CollectorsGrownBack" and "(1 -> 7 of 7)" in cluster.events[-1][2]


def test_no_grow_back_while_a_higher_priority_workload_waits_and_it_looks_again() -> None:
    low = collector_job("low", 1, annotations={"diengine/shrunk-from": '{"collector":7}'})
    waiting = {"metadata": {"name": "dijob-x", "namespace": NS}, "spec": {"priority": 300, "queueName": "q"}}
    cluster = Cluster(8, 2, [low], [admitted("low", 100), waiting])
    grown, retry = cluster.shrinker().grow_back(load_job(low), low, {})
    assert not grown and retry is not None and retry > 0
    assert cluster.scaled == []


def test_a_job_that_was_not_shrunk_makes_no_request() -> None:
    low = collector_job("low", 7)
    cluster = Cluster(8, 8, [low], [])
    cluster.workloads = None  # type: ignore[assignment]  # would fail if read
    assert cluster.shrinker().grow_back(load_job(low), low, {}) == (False, None)


def test_a_cluster_queue_status_still_behind_does_not_make_the_next_pass_give_back_more() -> None:
    low = collector_job("low", 7)
    cluster = Cluster(8, 8, [low], [admitted("low", 100)])
    now = [0.0]
    shrinker = Shrinker(
        cluster, lambda: cluster.workloads, lambda ns, n: cluster.bodies.get(n), cluster, cluster.post,
        settle_wait=1.0, sleep=lambda s: None, clock=lambda: now[0],
    )  # fmt: skip
    high, wl = high_workload(3)
    assert shrinker.make_room(high, wl, {}) is True
    cluster.reserved = 8  # Kueue's status behind: it still shows the quota taken
    assert shrinker.make_room(high, wl, {}) is False
    assert len(cluster.scaled) == 1
    now[0] = 5.0  # two settle waits later the job is looked at again
    assert shrinker.make_room(high, wl, {}) is True


def test_the_running_condition_of_a_shrunk_job_has_the_reason_and_its_numbers() -> None:
    counts = MEMBERSHIP.task_counts()
    task_name = next(t for t in counts if t != "learner")
    shrunk = ((ANNOTATION_SHRUNK_FROM, json.dumps({task_name: counts[task_name] + 4})),)
    cond = _running_condition(observe(workflow(), running(), annotations=shrunk))
    assert cond["reason"] == "CollectorsShrunk"
    assert f"{task_name} {counts[task_name]} of {counts[task_name] + 4}: 4 replica(s) given back" in cond["message"]
    assert _running_condition(observe(workflow(), running()))["reason"] == "JobRunning"


def _running_condition(obs: Any) -> dict[str, Any]:
    update = status_after(obs, {"phase": "Running"}, "2026-12-05T00:00:00Z")
    assert update.phase == "Running"
    return next(c for c in update.status["conditions"] if c["type"] == "Running")
