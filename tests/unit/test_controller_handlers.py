"""kopf wiring: one cache-feeding indexer and one event handler per kind kopf watches (no cluster)."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import kopf

from dihera.controller.handlers import BASE_KINDS, RESOURCES, build_registry, configure_watching
from dihera.controller.queue import ReconcileQueue
from dihera.controller.watch_cache import WatchCache


def workload() -> dict[str, Any]:
    meta = {"name": "j-workload", "namespace": "ns", "uid": "w", "labels": {"diengine/job": "j"}}
    return {"metadata": meta, "spec": {"queueName": "q"}}


def wait_for(predicate: Any, seconds: float = 5) -> None:
    deadline = time.monotonic() + seconds
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.01)


def test_kopf_watches_only_dijobs_without_kueue() -> None:
    queue = ReconcileQueue(lambda ns, name: None)
    registry = build_registry(queue, WatchCache(), lambda **_: None)
    indexers = {h.id for h in registry._indexing.get_all_handlers()}
    watchers = list(registry._watching.get_all_handlers())
    assert indexers == {"watch-cache-DIJob"} and len(watchers) == 1
    assert BASE_KINDS == ("DIJob",)  # pods, Workflows, ConfigMaps: dihera.controller.job_watches, outside kopf
    plain = kopf.OperatorSettings()
    configure_watching(plain)
    assert dict(plain.watching.label_selectors) == {}  # DIJobs: all of them
    queue.close()


def test_with_kueue_workloads_feed_the_cache_and_queue_their_job() -> None:
    """--kueue adds the DIJobs' Workloads (label-selected) to kopf's watches; without it their CRD need not exist."""
    queued: list[tuple[str, str]] = []
    entered, release = threading.Event(), threading.Event()

    def reconcile(ns: str, name: str) -> None:
        queued.append((ns, name))
        entered.set()
        release.wait(5)

    queue = ReconcileQueue(reconcile)
    cache = WatchCache()
    registry = build_registry(queue, cache, lambda **_: None, kinds=(*BASE_KINDS, "Workload"))
    indexers = {h.id: h for h in registry._indexing.get_all_handlers()}
    watchers = {h.id: h for h in registry._watching.get_all_handlers()}
    assert set(indexers) == {f"watch-cache-{kind}" for kind in RESOURCES} and "Workload-event" in watchers
    settings = kopf.OperatorSettings()
    configure_watching(settings, kueue=True)
    assert settings.watching.label_selectors["kueue.x-k8s.io", "workloads"] == (
        "app.kubernetes.io/managed-by=dihera,diengine/job"
    )

    asyncio.run(indexers["watch-cache-Workload"].fn(body=workload()))
    assert cache.get("Workload", "ns", "j-workload") is not None
    on_workload = watchers["Workload-event"].fn
    labels = workload()["metadata"]["labels"]
    asyncio.run(on_workload(type="MODIFIED", body=workload(), labels=labels, namespace="ns"))
    assert entered.wait(5)  # the handler returned; the pass runs on the queue's worker
    asyncio.run(on_workload(type="DELETED", body=workload(), labels=labels, namespace="ns"))
    assert cache.get("Workload", "ns", "j-workload") is None and queued == [("ns", "j")]
    release.set()
    wait_for(lambda: len(queued) == 2)
    assert queued == [("ns", "j"), ("ns", "j")]  # the DELETED event made one more pass
    queue.close()


def test_a_deleted_dijob_releases_its_namespace() -> None:
    passes: list[tuple[str, str]] = []
    released: list[str] = []
    queue = ReconcileQueue(lambda ns, name: passes.append((ns, name)))  # type: ignore[func-returns-value]
    cache = WatchCache()
    registry = build_registry(queue, cache, lambda **_: None, on_job_deleted=released.append)
    on_dijob = next(iter(registry._watching.get_all_handlers())).fn
    dijob = {"metadata": {"name": "j", "namespace": "ns", "uid": "u"}}
    cache.put("DIJob", dijob)
    asyncio.run(on_dijob(type="DELETED", body=dijob, name="j", namespace="ns"))
    assert released == ["ns"] and cache.get("DIJob", "ns", "j") is None  # the job watches stop if nothing is left
    queue.close()


def test_the_event_of_our_own_status_write_queues_no_pass() -> None:
    passes: list[str] = []
    queue = ReconcileQueue(lambda ns, name: passes.append(name))  # type: ignore[func-returns-value]
    cache = WatchCache()
    registry = build_registry(queue, cache, lambda **_: None)
    indexers = {h.id: h for h in registry._indexing.get_all_handlers()}
    watchers = {h.id: h for h in registry._watching.get_all_handlers()}
    on_dijob = next(iter(watchers.values())).fn

    def deliver(version: str) -> None:  # as kopf does: the indexer first, then the event handler
        body = {"metadata": {"name": "j", "namespace": "ns", "uid": "u", "resourceVersion": version}}
        asyncio.run(indexers["watch-cache-DIJob"].fn(body=body))
        asyncio.run(on_dijob(type="MODIFIED", body=body, name="j", namespace="ns"))

    deliver("1")
    wait_for(lambda: passes == ["j"])
    written = {"metadata": {"name": "j", "namespace": "ns", "uid": "u", "resourceVersion": "2"}, "status": {}}
    assert cache.replace("DIJob", {"metadata": {"name": "j", "namespace": "ns", "uid": "u"}}, written)
    deliver("2")  # our status write coming back
    time.sleep(0.2)
    assert passes == ["j"]
    deliver("3")  # anyone else's change
    wait_for(lambda: len(passes) == 2)
    assert passes == ["j", "j"]
    queue.close()
