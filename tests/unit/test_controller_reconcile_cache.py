"""Reconciles that read from the watch cache: no request in the steady state, the API server only when the
cache may be behind a decision (in-memory stores, no cluster)."""

from __future__ import annotations

import copy
from typing import Any, cast

from dihera.controller.metrics import Metrics
from dihera.controller.reconcile import LISTING_WAIT, Reconciler
from dihera.kube.watch import Store
from dihera.membership import Membership
from dihera.naming import membership_configmap_name
from tests.unit.controller_doubles import GROWN, LIVE, NAME, NS, T1, Cluster, dijob, pod
from tests.unit.controller_doubles import reconciler as make_reconciler

READS = ("get", "get_configmap", "get_workflow", "list_pods", "get_service", "list_workflows")


class CountingCluster(Cluster):
    """The in-memory cluster, counting the reads that reach it (the API server's)."""

    def __init__(self, body: dict[str, Any], membership: Membership, converged: int) -> None:
        super().__init__(body, membership, converged)
        owners = self.configmap["metadata"]["ownerReferences"]
        self.configmap["metadata"] = {"name": membership_configmap_name(NAME), "namespace": NS, "uid": "cm"}
        self.configmap["metadata"]["ownerReferences"] = owners
        self.workflow["metadata"].update(namespace=NS, labels={"diengine/job": NAME}, resourceVersion="1")
        self.service["metadata"].update(uid="svc", resourceVersion="1")
        self.reads: list[str] = []

    def get_service(self, namespace: str, name: str) -> dict[str, Any] | None:
        self.reads.append("get_service")
        return super().get_service(namespace, name)

    def list_workflows(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        self.reads.append("list_workflows")
        return super().list_workflows(namespace, selector)

    def get(self, namespace: str, name: str) -> dict[str, Any]:
        self.reads.append("get")
        return super().get(namespace, name)

    def get_configmap(self, namespace: str, name: str) -> dict[str, Any]:
        self.reads.append("get_configmap")
        return super().get_configmap(namespace, name)

    def get_workflow(self, namespace: str, name: str) -> dict[str, Any]:
        self.reads.append("get_workflow")
        return super().get_workflow(namespace, name)

    def list_pods(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        self.reads.append("list_pods")
        return super().list_pods(namespace, selector)

    def pods(self) -> list[dict[str, Any]]:
        out = []
        for r in LIVE.replicas:
            p = pod(r)
            p["metadata"].update(namespace=NS, uid=f"pod-{r.rank}")
            p["metadata"]["labels"]["diengine/job"] = NAME
            out.append(p)
        return out

    def watched(self) -> Store:
        """A cache holding what the watches delivered: every object as the cluster has it now."""
        cache = Store()
        cache.put("DIJob", self.body)
        cache.put("ConfigMap", self.configmap)
        cache.put("Workflow", self.workflow)
        cache.put("Service", self.service)
        for p in self.pods():
            cache.put("Pod", p)
        return cache


def running_job(**status: Any) -> CountingCluster:
    body = dijob(collectors=2, generation=1, observed=1)
    body["status"].update(status)
    return CountingCluster(body, LIVE, converged=1)


def reconciler(cluster: CountingCluster, cache: Store, metrics: Metrics | None = None) -> Reconciler:
    store = cast(Any, cluster)
    return make_reconciler(store, metrics or Metrics(), clock=lambda: T1, cache=cache)


def test_a_steady_state_pass_reads_nothing_from_the_api_and_a_second_one_writes_nothing() -> None:
    cluster = running_job()
    cache = cluster.watched()
    r = reconciler(cluster, cache)
    r.reconcile(NS, NAME)
    assert cluster.reads == []
    (status,) = cluster.statuses  # the first pass completes the status (replicas, conditions)
    assert status["phase"] == "Running"
    # the cache holds the written status at once, so the next pass (any pod event) has nothing to write
    r.reconcile(NS, NAME)
    assert cluster.reads == [] and len(cluster.statuses) == 1
    assert cluster.events == []  # it was Running already: no phase change, no Event


def test_a_status_write_from_a_cached_dijob_leaves_what_another_writer_wrote_since() -> None:
    cluster = running_job()
    cache = cluster.watched()
    cluster.body["status"]["profilings"] = {"p": {"fps": 1}}  # the di-server, after the cache's copy
    reconciler(cluster, cache).reconcile(NS, NAME)
    (status,) = cluster.statuses
    assert status["phase"] == "Running" and status["profilings"] == {"p": {"fps": 1}}
    assert cluster.reads == []


def test_a_workflow_the_status_names_but_the_cache_lacks_is_asked_of_the_api_and_nothing_is_written() -> None:
    cluster = running_job()
    cache = cluster.watched()
    cache.drop("Workflow", cluster.workflow)  # created, its ADDED event not delivered yet
    metrics = Metrics()
    reconciler(cluster, cache, metrics).reconcile(NS, NAME)
    assert cluster.reads == ["get_workflow"]
    assert cluster.statuses == [] and cluster.events == []  # not Failed "Workflow deleted"
    assert metrics.cache_behind._value.get() == 1


def test_a_workflow_deleted_for_real_fails_the_job_after_a_live_read() -> None:
    cluster = running_job()
    cache = cluster.watched()
    cache.drop("Workflow", cluster.workflow)
    cluster.workflow = None  # type: ignore[assignment]
    metrics = Metrics()
    reconciler(cluster, cache, metrics).reconcile(NS, NAME)
    (status,) = cluster.statuses
    assert status["phase"] == "Failed" and "was deleted" in status["conditions"][-1]["message"]
    assert "get" in cluster.reads and metrics.live_confirmations._value.get() == 1


def test_a_configmap_behind_the_recorded_membership_generation_waits_for_its_event() -> None:
    cluster = running_job(membershipGeneration=2)  # a scaler committed generation 2; the cache has 1
    cluster.configmap["data"]["membership.json"] = GROWN.to_json()
    cache = cluster.watched()
    behind = copy.deepcopy(cluster.configmap)
    behind["data"]["membership.json"] = LIVE.to_json()
    cache.put("ConfigMap", behind)
    reconciler(cluster, cache).reconcile(NS, NAME)
    assert cluster.reads == [] and cluster.statuses == []


def test_an_ending_seen_in_the_cache_is_confirmed_by_the_api_before_it_is_written() -> None:
    cluster = running_job()
    cache = cluster.watched()
    stale = copy.deepcopy(cluster.workflow)
    stale["status"]["phase"] = "Failed"  # what the cache says; the API server says Running
    cache.put("Workflow", stale)
    reconciler(cluster, cache).reconcile(NS, NAME)
    assert set(cluster.reads) == set(READS)
    assert [s["phase"] for s in cluster.statuses] == ["Running"]


def test_a_status_write_refused_by_its_precondition_is_recomputed_from_the_api() -> None:
    cluster = running_job()  # (only a job's first status write carries one; here the fake refuses any)
    cluster.conflicts = 1
    reconciler(cluster, cluster.watched()).reconcile(NS, NAME)
    assert set(cluster.reads) == set(READS) and len(cluster.statuses) == 1


def test_a_pass_waits_for_the_first_listing_of_its_namespaces_pods() -> None:
    cluster = running_job()
    cache = cluster.watched()
    listed: list[str] = []
    store = cast(Any, cluster)
    metrics = Metrics()
    r = make_reconciler(
        store,
        metrics,
        clock=lambda: T1,
        cache=cache,
        job_objects_ready=lambda ns, job: bool(listed.append((ns, job))) or len(listed) > 1,  # listed by the 2nd pass
    )
    assert r.reconcile(NS, NAME) == LISTING_WAIT  # again at the latest then: the pods are being listed
    assert cluster.statuses == [] and cluster.reads == [] and metrics.cache_behind._value.get() == 1
    assert r.reconcile(NS, NAME) is None
    (status,) = cluster.statuses
    assert status["phase"] == "Running" and listed == [(NS, NAME), (NS, NAME)]
