"""The jobs' pod, Workflow and ConfigMap watches outside kopf (dihera/controller/job_watches.py) and the
peering gate (dihera/controller/peering.py): what a listing and an event do to the cache and the queue
(no cluster)."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from kubernetes import client

from dihera.controller.job_watches import JobWatches, Watched
from dihera.controller.peering import PEERING_LOGGER, PeeringGate
from dihera.controller.queue import ReconcileQueue
from dihera.controller.watch_cache import WatchCache


def pod(name: str, job: str = "j", uid: str | None = None, ns: str = "ns") -> dict[str, Any]:
    meta = {"name": name, "namespace": ns, "uid": uid or name, "labels": {"diengine/job": job}}
    return {"metadata": meta, "status": {"phase": "Running"}}


def watches(cache: WatchCache, requests: list[tuple[str, str, float | None]], active: bool = True) -> JobWatches:
    """As the controller's: pods batched 0.5 s, Workflows paced, ConfigMaps at once."""
    return JobWatches(
        client.ApiClient(),  # never called: the tests hand events over as the informer would
        cache,
        lambda ns, job: requests.append((ns, job, None)),
        lambda ns, job, window: requests.append((ns, job, window)),
        (Watched("Pod", 0.5), Watched("Workflow", 0.0, own_writes=True), Watched("ConfigMap", None, own_writes=True)),
        cluster_wide=False,
        active=lambda: active,
    )


def workflow(name: str = "j", version: str = "1", ns: str = "ns") -> dict[str, Any]:
    meta = {"name": name, "namespace": ns, "uid": f"wf-{name}", "resourceVersion": version}
    return {"metadata": {**meta, "labels": {"diengine/job": name}}, "status": {"phase": "Running"}}


def configmap(job: str = "j", ns: str = "ns") -> dict[str, Any]:
    meta = {"name": f"{job}-membership", "namespace": ns, "uid": f"cm-{job}", "labels": {"diengine/job": job}}
    return {"metadata": meta, "data": {"generation": "1"}}


def test_a_listing_replaces_the_namespaces_pods_and_queues_their_jobs() -> None:
    cache, requests = WatchCache(), []  # type: ignore[var-annotated]
    cache.put("Pod", pod("old-0", job="gone"))
    cache.put("Pod", pod("other-0", job="k", ns="other"))
    w = watches(cache, requests)
    w._listed("ns", "Pod", [pod("j-0"), pod("j-1")], "10")
    assert [p["metadata"]["name"] for p in cache.pods("ns", "j")] == ["j-0", "j-1"]
    assert cache.pods("ns", "gone") == []  # not in the listing: dropped, and its job reconciled
    assert [p["metadata"]["name"] for p in cache.pods("other", "k")] == ["other-0"]  # another namespace's
    assert requests == [("ns", "gone", 0.5), ("ns", "j", 0.5)]


def test_events_feed_the_cache_queue_the_job_batched_and_the_last_deletion_releases_the_namespace() -> None:
    cache, requests = WatchCache(), []  # type: ignore[var-annotated]
    w = watches(cache, requests)
    w._event("ns", "Pod", "ADDED", pod("j-0"))
    w._event("ns", "Pod", "MODIFIED", pod("j-0"))
    assert len(cache.pods("ns", "j")) == 1 and requests == [("ns", "j", 0.5)] * 2
    stopped = threading.Event()

    class Watch:  # what release_if_idle stops
        stopped = False

        def stop(self, wait: float = 5.0) -> None:
            stopped.set()

    w._watches["ns"] = {"Pod": Watch(), "Workflow": Watch()}  # type: ignore[dict-item]
    cache.put("DIJob", {"metadata": {"name": "j", "namespace": "ns", "uid": "d"}})
    w._event("ns", "Workflow", "ADDED", workflow())
    w._event("ns", "Pod", "DELETED", pod("j-0"))
    assert cache.pods("ns", "j") == [] and not stopped.is_set()  # the DIJob is still there
    cache.drop("DIJob", {"metadata": {"name": "j", "namespace": "ns", "uid": "d"}})
    w.release_if_idle("ns")
    assert not stopped.is_set()  # its Workflow is still there (the garbage collector deletes it next)
    w._event("ns", "Workflow", "DELETED", workflow())
    assert stopped.is_set() and w.watching() == []


def test_a_paused_replica_feeds_its_cache_but_queues_nothing() -> None:
    cache, requests = WatchCache(), []  # type: ignore[var-annotated]
    w = watches(cache, requests, active=False)
    w._event("ns", "Pod", "ADDED", pod("j-0"))
    w._listed("ns", "Pod", [pod("j-1")], "3")
    w._event("ns", "Workflow", "ADDED", workflow())
    assert [p["metadata"]["name"] for p in cache.pods("ns", "j")] == ["j-1"] and requests == []


def test_each_kind_queues_its_job_as_configured_and_a_workflow_listing_sweeps_only_workflows() -> None:
    cache, requests = WatchCache(), []  # type: ignore[var-annotated]
    w = watches(cache, requests)
    w._event("ns", "Workflow", "MODIFIED", workflow())
    w._event("ns", "ConfigMap", "ADDED", configmap())
    assert requests == [("ns", "j", 0.0), ("ns", "j", None)]  # a Workflow's: paced; a ConfigMap's: at once
    assert cache.get("Workflow", "ns", "j") is not None and cache.get("ConfigMap", "ns", "j-membership") is not None
    cache.put("Pod", pod("j-0"))
    requests.clear()
    w._listed("ns", "Workflow", [workflow("k")], "7")  # j's Workflow was deleted while the watch restarted
    assert cache.get("Workflow", "ns", "j") is None and cache.get("Workflow", "ns", "k") is not None
    assert len(cache.pods("ns", "j")) == 1 and cache.get("ConfigMap", "ns", "j-membership") is not None
    assert requests == [("ns", "j", 0.0), ("ns", "k", 0.0)]


def test_the_event_of_our_own_workflow_write_queues_no_pass() -> None:
    cache, requests = WatchCache(), []  # type: ignore[var-annotated]
    w = watches(cache, requests)
    w._event("ns", "Workflow", "ADDED", workflow(version="1"))
    assert cache.replace("Workflow", workflow(version="1"), workflow(version="2"))  # a pass wrote it (stopped it)
    requests.clear()
    w._event("ns", "Workflow", "MODIFIED", workflow(version="2"))
    assert requests == []  # the pass that wrote version 2 decided from it
    w._event("ns", "Workflow", "MODIFIED", workflow(version="3"))  # someone else's change
    assert requests == [("ns", "j", 0.0)]


def test_ready_starts_every_kinds_watch_answers_once_all_listed_and_then_queues_the_waiting_jobs(
    monkeypatch: Any,
) -> None:
    started: list[str] = []

    class Listing:  # stands in for an Informer: listed when the test says so
        def __init__(self, call: Any, name: str, on_synced: Any, **_: Any) -> None:
            self.name, self.synced, self.stopped, self.on_synced = name, threading.Event(), False, on_synced
            started.append(name)

        def start(self) -> None: ...

        def stop(self, wait: float = 5.0) -> None:
            self.stopped = True

        def list_first(self) -> None:  # as Informer._run does after its first listing
            self.synced.set()
            self.on_synced()

    monkeypatch.setattr("dihera.controller.job_watches.Informer", Listing)
    requests: list[tuple[str, str, float | None]] = []
    w = watches(WatchCache(), requests)
    assert not w.ready("ns", "a") and sorted(started) == ["ConfigMaps in ns", "Pods in ns", "Workflows in ns"]
    assert not w.ready("ns", "b")
    kinds = w._watches["ns"]
    kinds["Pod"].list_first()
    kinds["Workflow"].list_first()
    assert not w.ready("ns") and requests == []  # the ConfigMaps are not listed yet: nobody queued
    kinds["ConfigMap"].list_first()
    assert requests == [("ns", "a", None), ("ns", "b", None)]  # at once, not after the reconcile's wait
    assert w.ready("ns", "c") and len(started) == 3  # nothing started twice
    kinds["Workflow"].stop()
    assert not w.ready("ns", "d") and started[-1] == "Workflows in ns"  # a stopped watch is started again
    w._watches["ns"]["Workflow"].list_first()
    assert requests[2:] == [("ns", "d", None)]
    w.close()
    assert not w.ready("ns")


def test_the_peering_gate_follows_kopfs_pause_and_resume_records() -> None:
    gate = PeeringGate()
    gate.install()
    logger = logging.getLogger(PEERING_LOGGER)
    try:
        assert gate.active()  # until kopf logs a pause
        logger.info("Pausing operations in favour of [<Peer high: priority=200>].")
        assert not gate.active()
        logger.info("Resuming operations after the pause. Conflicting operators with the same priority are gone.")
        assert gate.active()
        logger.warning("Pausing all operators, including self: [...]")
        assert not gate.active()
    finally:
        logger.removeFilter(gate)


def test_a_paused_queue_drops_the_passes_it_would_run() -> None:
    passes: list[str] = []
    active = threading.Event()
    queue = ReconcileQueue(lambda ns, name: passes.append(name), active=active.is_set)  # type: ignore[func-returns-value]
    queue.request("ns", "a")
    time.sleep(0.2)
    assert passes == [] and queue.depth() == 0  # taken and dropped: the active replica reconciles it
    active.set()
    queue.request("ns", "b")
    deadline = time.monotonic() + 5
    while not passes and time.monotonic() < deadline:
        time.sleep(0.01)
    assert passes == ["b"]
    queue.close()
