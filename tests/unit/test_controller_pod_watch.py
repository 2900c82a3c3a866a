"""The jobs' pod watch outside kopf (dihera/controller/pod_watch.py) and the peering gate
(dihera/controller/peering.py): what a listing and an event do to the cache and the queue (no cluster)."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from kubernetes import client

from dihera.controller.peering import PEERING_LOGGER, PeeringGate
from dihera.controller.pod_watch import PodWatches
from dihera.controller.queue import ReconcileQueue
from dihera.controller.watch_cache import WatchCache


def pod(name: str, job: str = "j", uid: str | None = None, ns: str = "ns") -> dict[str, Any]:
    meta = {"name": name, "namespace": ns, "uid": uid or name, "labels": {"diengine/job": job}}
    return {"metadata": meta, "status": {"phase": "Running"}}


def watches(cache: WatchCache, requests: list[tuple[str, str, float]], active: bool = True) -> PodWatches:
    return PodWatches(
        client.ApiClient(),  # never called: the tests hand events over as the informer would
        cache,
        lambda ns, job, window: requests.append((ns, job, window)),
        0.5,
        cluster_wide=False,
        active=lambda: active,
    )


def test_a_listing_replaces_the_namespaces_pods_and_queues_their_jobs() -> None:
    cache, requests = WatchCache(), []  # type: ignore[var-annotated]
    cache.put("Pod", pod("old-0", job="gone"))
    cache.put("Pod", pod("other-0", job="k", ns="other"))
    w = watches(cache, requests)
    w._listed("ns", [pod("j-0"), pod("j-1")], "10")
    assert [p["metadata"]["name"] for p in cache.pods("ns", "j")] == ["j-0", "j-1"]
    assert cache.pods("ns", "gone") == []  # not in the listing: dropped, and its job reconciled
    assert [p["metadata"]["name"] for p in cache.pods("other", "k")] == ["other-0"]  # another namespace's
    assert requests == [("ns", "gone", 0.5), ("ns", "j", 0.5)]


def test_events_feed_the_cache_queue_the_job_batched_and_the_last_deletion_releases_the_namespace() -> None:
    cache, requests = WatchCache(), []  # type: ignore[var-annotated]
    w = watches(cache, requests)
    w._event("ns", "ADDED", pod("j-0"))
    w._event("ns", "MODIFIED", pod("j-0"))
    assert len(cache.pods("ns", "j")) == 1 and requests == [("ns", "j", 0.5)] * 2
    stopped = threading.Event()

    class Watch:  # what release_if_idle stops
        stopped = False

        def stop(self, wait: float = 5.0) -> None:
            stopped.set()

    w._watches["ns"] = Watch()  # type: ignore[assignment]
    cache.put("DIJob", {"metadata": {"name": "j", "namespace": "ns", "uid": "d"}})
    w._event("ns", "DELETED", pod("j-0"))
    assert cache.pods("ns", "j") == [] and not stopped.is_set()  # the DIJob is still there
    cache.drop("DIJob", {"metadata": {"name": "j", "namespace": "ns", "uid": "d"}})
    w.release_if_idle("ns")
    assert stopped.is_set() and w.watching() == []


def test_a_paused_replica_feeds_its_cache_but_queues_nothing() -> None:
    cache, requests = WatchCache(), []  # type: ignore[var-annotated]
    w = watches(cache, requests, active=False)
    w._event("ns", "ADDED", pod("j-0"))
    w._listed("ns", [pod("j-1")], "3")
    assert [p["metadata"]["name"] for p in cache.pods("ns", "j")] == ["j-1"] and requests == []


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
