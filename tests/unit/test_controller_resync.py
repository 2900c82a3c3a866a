"""The periodic sweep: one listing per kind and namespace; what is gone is dropped and its job reconciled."""

from __future__ import annotations

from typing import Any

from dihera.controller.resync import SELECTORS, sweep_once
from dihera.controller.watch_cache import WatchCache
from tests.unit.test_controller_watch_cache import Clock, obj


class Listing:
    """What exists now, by kind; records every LIST it answers."""

    def __init__(self, clock: Clock, **uids: set[str]) -> None:
        self.clock, self.uids = clock, uids
        self.calls: list[tuple[str, str | None, str]] = []

    def list_uids(self, kind: str, namespace: str | None, selector: str = "") -> set[str]:
        self.clock.t += 1  # the listing is taken after the sweep read the clock
        self.calls.append((kind, namespace, selector))
        return self.uids.get(kind, set())


def filled(clock: Clock) -> WatchCache:
    cache = WatchCache(clock)
    cache.put("DIJob", obj("a", "job-a"))
    cache.put("DIJob", obj("b", "job-b"))
    cache.put("Workflow", obj("a", "wf-a", job="a"))
    cache.put("Pod", obj("a-0", "pod-a0", job="a"))
    cache.put("Pod", obj("b-0", "pod-b0", job="b"))
    return cache


def test_a_sweep_lists_each_kind_with_its_watch_selector_and_names_the_jobs_it_touched() -> None:
    clock = Clock()
    cache = filled(clock)
    clock.t = 5
    lister = Listing(clock, DIJob={"job-a"}, Workflow={"wf-a"}, Pod={"pod-a0"})
    touched = sweep_once(cache, lister, cluster_wide=False)
    assert touched == {("ns", "b")}  # b's DIJob and pod were deleted while the watch restarted
    assert cache.get("DIJob", "ns", "b") is None and cache.pods("ns", "b") == []
    assert cache.get("DIJob", "ns", "a") is not None and len(cache.pods("ns", "a")) == 1
    assert {(k, ns) for k, ns, _ in lister.calls} == {(k, "ns") for k in ("DIJob", "Workflow", "Pod", "ConfigMap")}
    assert all(sel == SELECTORS[k] for k, _, sel in lister.calls)
    assert SELECTORS["ConfigMap"] == "app.kubernetes.io/managed-by=dihera,diengine/job"


def test_cluster_wide_one_listing_per_kind() -> None:
    clock = Clock()
    lister = Listing(clock, DIJob={"job-a", "job-b"}, Workflow={"wf-a"}, Pod={"pod-a0", "pod-b0"})
    assert sweep_once(filled(clock), lister, cluster_wide=True) == set()
    assert [ns for _, ns, _ in lister.calls] == [None] * 4


def test_nothing_is_dropped_that_an_event_brought_after_the_listing_started() -> None:
    clock = Clock()
    cache = WatchCache(clock)

    class Racing(Listing):
        def list_uids(self, kind: str, namespace: str | None, selector: str = "") -> set[str]:
            if kind == "Pod":  # created after the listing was taken: its ADDED event arrives meanwhile
                cache.put("Pod", obj("c-0", "pod-c0", job="c"))
            return super().list_uids(kind, namespace, selector)

    cache.put("DIJob", obj("c", "job-c"))
    lister: Any = Racing(clock, DIJob={"job-c"})
    assert sweep_once(cache, lister, cluster_wide=False) == set()
    assert len(cache.pods("ns", "c")) == 1
