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


def configmap() -> dict[str, Any]:
    meta = {"name": "j-membership", "namespace": "ns", "uid": "c", "labels": {"diengine/job": "j"}}
    return {"metadata": meta, "data": {"generation": "1"}}


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
    assert {"Workflow-event", "ConfigMap-event"} <= set(watchers) and len(watchers) == 3
    assert "Pod" not in BASE_KINDS  # pods: dihera.controller.pod_watch, outside kopf

    asyncio.run(indexers["watch-cache-ConfigMap"].fn(body=configmap()))
    assert cache.get("ConfigMap", "ns", "j-membership") is not None
    on_configmap = watchers["ConfigMap-event"].fn
    labels = configmap()["metadata"]["labels"]
    asyncio.run(on_configmap(type="MODIFIED", body=configmap(), labels=labels, namespace="ns"))
    assert entered.wait(5)  # the handler returned; the pass runs on the queue's worker
    asyncio.run(on_configmap(type="DELETED", body=configmap(), labels=labels, namespace="ns"))
    assert cache.get("ConfigMap", "ns", "j-membership") is None and queued == [("ns", "j")]
    release.set()
    wait_for(lambda: len(queued) == 2)
    assert queued == [("ns", "j"), ("ns", "j")]  # the DELETED event made one more pass
    queue.close()


def test_server_side_selectors_for_everything_but_dijobs() -> None:
    settings = kopf.OperatorSettings()
    configure_watching(settings)
    selectors = settings.watching.label_selectors
    assert selectors["argoproj.io", "workflows"] == "diengine/job"
    assert ("v1", "pods") not in selectors  # not watched by kopf
    assert selectors["v1", "configmaps"] == "app.kubernetes.io/managed-by=dihera,diengine/job"


def test_with_kueue_workloads_are_watched_too() -> None:
    """--kueue adds the DIJobs' Workloads (label-selected) to the watches; without it their CRD need not exist."""
    queue = ReconcileQueue(lambda ns, name: None)
    registry = build_registry(queue, WatchCache(), lambda **_: None, kinds=(*BASE_KINDS, "Workload"))
    indexers = {h.id for h in registry._indexing.get_all_handlers()}
    watchers = {h.id for h in registry._watching.get_all_handlers()}
    assert indexers == {f"watch-cache-{kind}" for kind in RESOURCES if kind != "Pod"}
    assert "Workload-event" in watchers
    settings = kopf.OperatorSettings()
    configure_watching(settings, kueue=True)
    assert settings.watching.label_selectors["kueue.x-k8s.io", "workloads"] == (
        "app.kubernetes.io/managed-by=dihera,diengine/job"
    )
    plain = kopf.OperatorSettings()
    configure_watching(plain)
    assert ("kueue.x-k8s.io", "workloads") not in plain.watching.label_selectors


def test_a_workflow_event_is_paced_and_a_deleted_dijob_releases_its_namespace() -> None:
    passes: list[tuple[str, str]] = []
    released: list[str] = []
    queue = ReconcileQueue(lambda ns, name: passes.append((ns, name)))  # type: ignore[func-returns-value]
    registry = build_registry(queue, WatchCache(), lambda **_: None, on_job_deleted=released.append)
    watchers = {h.id: h for h in registry._watching.get_all_handlers()}
    workflow = {"metadata": {"name": "j", "namespace": "ns", "labels": {"diengine/job": "j"}}}
    on_workflow = watchers["Workflow-event"].fn
    asyncio.run(on_workflow(type="MODIFIED", body=workflow, labels=workflow["metadata"]["labels"], namespace="ns"))
    wait_for(lambda: len(passes) == 1, 0.5)  # a Workflow's: paced by the last pass's CPU only (here ~0: at once)
    assert passes == [("ns", "j")] and released == []
    on_dijob = next(h.fn for h in watchers.values() if h.id not in {"Workflow-event", "ConfigMap-event"})
    dijob = {"metadata": {"name": "j", "namespace": "ns", "uid": "u"}}
    asyncio.run(on_dijob(type="DELETED", body=dijob, name="j", namespace="ns"))
    assert released == ["ns"]  # the namespace's pod watch stops once nothing of it is left
    queue.close()


def test_the_event_of_our_own_status_write_queues_no_pass() -> None:
    passes: list[str] = []
    queue = ReconcileQueue(lambda ns, name: passes.append(name))  # type: ignore[func-returns-value]
    cache = WatchCache()
    registry = build_registry(queue, cache, lambda **_: None)
    indexers = {h.id: h for h in registry._indexing.get_all_handlers()}
    watchers = {h.id: h for h in registry._watching.get_all_handlers()}
    on_dijob = next(h.fn for h in watchers.values() if h.id not in {"Workflow-event", "ConfigMap-event"})

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
