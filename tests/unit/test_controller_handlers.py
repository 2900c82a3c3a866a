"""kopf wiring: one cache-feeding indexer and one event handler per watched kind (no cluster)."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import kopf

from dihera.controller.handlers import BASE_KINDS, RESOURCES, build_registry, configure_watching
from dihera.controller.queue import ReconcileQueue
from dihera.controller.watch_cache import WatchCache


def pod() -> dict[str, Any]:
    meta = {"name": "j-learner-0", "namespace": "ns", "uid": "p", "labels": {"diengine/job": "j"}}
    return {"metadata": meta, "status": {"phase": "Running"}}


def wait_for(predicate: Any, seconds: float = 5) -> None:
    deadline = time.monotonic() + seconds
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.01)


def test_every_watched_kind_feeds_the_cache_and_queues_its_job() -> None:
    queued: list[tuple[str, str]] = []
    entered, release = threading.Event(), threading.Event()

    def reconcile(ns: str, name: str) -> None:
        queued.append((ns, name))
        entered.set()
        release.wait(5)

    queue = ReconcileQueue(reconcile)
    cache = WatchCache()
    registry = build_registry(queue, cache, lambda **_: None)
    indexers = {h.id: h for h in registry._indexing.get_all_handlers()}
    watchers = {h.id: h for h in registry._watching.get_all_handlers()}
    assert set(indexers) == {f"watch-cache-{kind}" for kind in BASE_KINDS}
    assert {"Workflow-event", "Pod-event", "ConfigMap-event"} <= set(watchers) and len(watchers) == 4

    asyncio.run(indexers["watch-cache-Pod"].fn(body=pod()))
    assert [p["metadata"]["name"] for p in cache.pods("ns", "j")] == ["j-learner-0"]
    on_pod = watchers["Pod-event"].fn
    asyncio.run(on_pod(type="MODIFIED", body=pod(), labels=pod()["metadata"]["labels"], namespace="ns"))
    assert entered.wait(5)  # the handler returned; the pass runs on the queue's worker
    asyncio.run(on_pod(type="DELETED", body=pod(), labels=pod()["metadata"]["labels"], namespace="ns"))
    assert cache.pods("ns", "j") == [] and queued == [("ns", "j")]
    release.set()
    wait_for(lambda: len(queued) == 2)
    assert queued == [("ns", "j"), ("ns", "j")]  # the DELETED event made one more pass
    queue.close()


def test_server_side_selectors_for_everything_but_dijobs() -> None:
    settings = kopf.OperatorSettings()
    configure_watching(settings)
    selectors = settings.watching.label_selectors
    assert selectors["argoproj.io", "workflows"] == selectors["v1", "pods"] == "diengine/job"
    assert selectors["v1", "configmaps"] == "app.kubernetes.io/managed-by=dihera,diengine/job"


def test_with_kueue_workloads_are_watched_too() -> None:
    """--kueue adds the DIJobs' Workloads (label-selected) to the watches; without it their CRD need not exist."""
    queue = ReconcileQueue(lambda ns, name: None)
    registry = build_registry(queue, WatchCache(), lambda **_: None, kinds=(*BASE_KINDS, "Workload"))
    indexers = {h.id for h in registry._indexing.get_all_handlers()}
    watchers = {h.id for h in registry._watching.get_all_handlers()}
    assert indexers == {f"watch-cache-{kind}" for kind in RESOURCES}
    assert "Workload-event" in watchers
    settings = kopf.OperatorSettings()
    configure_watching(settings, kueue=True)
    assert settings.watching.label_selectors["kueue.x-k8s.io", "workloads"] == (
        "app.kubernetes.io/managed-by=dihera,diengine/job"
    )
    plain = kopf.OperatorSettings()
    configure_watching(plain)
    assert ("kueue.x-k8s.io", "workloads") not in plain.watching.label_selectors


def test_a_burst_of_pod_events_makes_one_pass_after_the_batch_period() -> None:
    passes: list[tuple[str, str, float]] = []
    queue = ReconcileQueue(lambda ns, name: passes.append((ns, name, time.monotonic())))  # type: ignore[func-returns-value]
    registry = build_registry(queue, WatchCache(), lambda **_: None, pod_batch=0.3)
    watchers = {h.id: h for h in registry._watching.get_all_handlers()}
    started = time.monotonic()
    for _ in range(10):
        asyncio.run(
            watchers["Pod-event"].fn(type="MODIFIED", body=pod(), labels=pod()["metadata"]["labels"], namespace="ns")
        )
    assert passes == [] and 0 < queue.wakeups()[("ns", "j")] <= 0.3  # nothing yet: one pass is due
    deadline = time.monotonic() + 5
    while not passes and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.3)  # no second pass follows
    assert [(ns, name) for ns, name, _ in passes] == [("ns", "j")]
    assert passes[0][2] - started >= 0.3
    workflow = {"metadata": {"name": "j", "namespace": "ns", "labels": {"diengine/job": "j"}}}
    on_workflow = watchers["Workflow-event"].fn
    asyncio.run(on_workflow(type="MODIFIED", body=workflow, labels=workflow["metadata"]["labels"], namespace="ns"))
    wait_for(lambda: len(passes) == 2, 0.2)  # a Workflow's: paced by the last pass's CPU only (here ~0: at once)
    assert len(passes) == 2
    queue.close()


def test_the_event_of_our_own_status_write_queues_no_pass() -> None:
    passes: list[str] = []
    queue = ReconcileQueue(lambda ns, name: passes.append(name))  # type: ignore[func-returns-value]
    cache = WatchCache()
    registry = build_registry(queue, cache, lambda **_: None)
    indexers = {h.id: h for h in registry._indexing.get_all_handlers()}
    watchers = {h.id: h for h in registry._watching.get_all_handlers()}
    on_dijob = next(h.fn for h in watchers.values() if h.id not in {"Workflow-event", "Pod-event", "ConfigMap-event"})

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
