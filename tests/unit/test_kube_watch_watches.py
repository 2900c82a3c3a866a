"""Which objects are watched where (dihera/kube/watch/watches.py): what a listing and an event do to the store
and what the owner is told, the on-demand kinds of a namespace, namespace patterns (no cluster: informers
stand in, the tests hand over what an informer would)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from kubernetes import client

from dihera.kube.watch import Scopes, Store, Watches
from tests.builders import PodBuilder, WorkflowBuilder


def pod(name: str, job: str = "j", uid: str | None = None, ns: str = "ns") -> dict[str, Any]:
    return PodBuilder(name).namespace(ns).uid(uid or name).job(job).phase("Running").obj()


def workflow(name: str = "j", version: str = "1", ns: str = "ns") -> dict[str, Any]:
    return WorkflowBuilder(name).namespace(ns).uid(f"wf-{name}").version(version).job(name).phase("Running").obj()


def namespace(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "uid": f"ns-{name}"}}


class Listing:
    """Stands in for an Informer: started and listed when the test says so."""

    started: list[str] = []

    def __init__(self, call: Any, name: str, on_synced: Any = None, **_: Any) -> None:
        self.name, self.synced, self.stopped, self.on_synced = name, threading.Event(), False, on_synced
        Listing.started.append(name)

    def start(self) -> None: ...

    def stop(self, wait: float = 5.0) -> None:
        self.stopped = True

    def list_first(self) -> None:  # as Informer._run does after its first listing
        self.synced.set()
        if self.on_synced is not None:
            self.on_synced()


@pytest.fixture
def listings(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    Listing.started = []
    monkeypatch.setattr("dihera.kube.watch.watches.Informer", Listing)
    return Listing.started


class Told:
    """What the owner was told: events, listings (names listed, names gone), jobs ready."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []
        self.listings: list[tuple[str, list[str], list[str]]] = []
        self.ready: list[set[tuple[str, str]]] = []

    def watches(self, store: Store, scopes: Scopes | None = None, **kw: Any) -> Watches:
        def names(objs: list[dict[str, Any]]) -> list[str]:
            return sorted(o["metadata"]["name"] for o in objs)

        return Watches(
            client.ApiClient(),  # never called: the informers stand in
            store,
            scopes or Scopes(("ns",)),
            kw.get("always", ("DIJob",)),
            kw.get("on_demand", ("Pod", "Workflow", "ConfigMap")),
            on_event=lambda kind, type_, obj: self.events.append((kind, type_, obj["metadata"]["name"])),
            on_listed=lambda kind, listed, gone: self.listings.append((kind, names(listed), names(gone))),
            on_ready=self.ready.append,
        )


def test_a_listing_replaces_the_namespaces_objects_of_its_kind_and_tells_what_it_dropped() -> None:
    store, told = Store(), Told()
    store.put("Pod", pod("old-0", job="gone"))
    store.put("Pod", pod("other-0", job="k", ns="other"))
    store.put("Workflow", workflow("j"))
    w = told.watches(store)
    w._listed("ns", "Pod", [pod("j-0"), pod("j-1")], "10")
    assert [p["metadata"]["name"] for p in store.pods("ns", "j")] == ["j-0", "j-1"]
    assert store.pods("ns", "gone") == []  # not in the listing: dropped
    assert [p["metadata"]["name"] for p in store.pods("other", "k")] == ["other-0"]  # another namespace's
    assert store.get("Workflow", "ns", "j") is not None  # another kind's
    assert told.listings == [("Pod", ["j-0", "j-1"], ["old-0"])]


def test_the_owner_is_told_of_an_event_after_the_store_has_it() -> None:
    store = Store()
    seen: list[int] = []
    w = Watches(
        client.ApiClient(), store, Scopes(("ns",)), ("DIJob",), ("Pod",),
        on_event=lambda kind, type_, obj: seen.append(len(store.pods("ns", "j"))),
    )  # fmt: skip
    w._event("ns", "Pod", "ADDED", pod("j-0"))
    w._event("ns", "Pod", "DELETED", pod("j-0"))
    assert seen == [1, 0]


def test_the_last_deletion_of_a_namespace_releases_its_on_demand_watches(listings: list[str]) -> None:
    store, told = Store(), Told()
    w = told.watches(store)
    store.put("DIJob", {"metadata": {"name": "j", "namespace": "ns", "uid": "d"}})
    assert not w.ready("ns", "j") and w.on_demand_scopes() == ["ns"]
    w._event("ns", "Workflow", "ADDED", workflow())
    w._event("ns", "Pod", "ADDED", pod("j-0"))
    w._event("ns", "Pod", "DELETED", pod("j-0"))
    w.release_if_idle("ns")
    assert w.on_demand_scopes() == ["ns"]  # the DIJob is still there
    store.drop("DIJob", {"metadata": {"name": "j", "namespace": "ns", "uid": "d"}})
    w.release_if_idle("ns")
    assert w.on_demand_scopes() == ["ns"]  # its Workflow is still there (the garbage collector deletes it next)
    w._event("ns", "Workflow", "DELETED", workflow())
    w.release_if_idle("ns")
    assert w.on_demand_scopes() == []
    added = [("Workflow", "ADDED", "j"), ("Pod", "ADDED", "j-0")]
    assert told.events == [*added, ("Pod", "DELETED", "j-0"), ("Workflow", "DELETED", "j")]


def test_ready_starts_every_on_demand_kind_answers_once_all_listed_and_then_hands_over_the_waiting_jobs(
    listings: list[str],
) -> None:
    told = Told()
    w = told.watches(Store())
    w.start()
    assert listings == ["DIJobs in ns"]  # the kinds always watched start with the scope
    assert not w.ready("ns", "a")
    assert sorted(listings[1:]) == ["ConfigMaps in ns", "Pods in ns", "Workflows in ns"]
    assert not w.ready("ns", "b")
    kinds = w._informers["ns"]
    kinds["Pod"].list_first()  # type: ignore[attr-defined]
    kinds["Workflow"].list_first()  # type: ignore[attr-defined]
    assert not w.ready("ns") and told.ready == []  # the ConfigMaps are not listed yet: nobody told
    kinds["ConfigMap"].list_first()  # type: ignore[attr-defined]
    assert told.ready == [{("ns", "a"), ("ns", "b")}]  # at once, not after the reconcile's wait
    assert w.ready("ns", "c") and len(listings) == 4  # nothing started twice
    kinds["Workflow"].stop()
    assert not w.ready("ns", "d") and listings[-1] == "Workflows in ns"  # a stopped watch is started again
    w._informers["ns"]["Workflow"].list_first()  # type: ignore[attr-defined]
    assert told.ready[1:] == [{("ns", "d")}]
    assert not w.synced()
    kinds["DIJob"].list_first()  # type: ignore[attr-defined]
    assert w.synced()
    w.close()
    assert not w.ready("ns")


def test_every_namespace_is_one_scope_of_one_watch_per_kind(listings: list[str]) -> None:
    w = Told().watches(Store(), Scopes(), always=("DIJob", "ConfigMap", "Pod"), on_demand=())
    w.start()
    assert listings == ["DIJobs", "ConfigMaps", "Pods"] and w.scopes() == ["*"]
    assert w.ready("anywhere", "j")  # nothing on demand: always ready
    w.close()


def test_patterns_watch_the_namespaces_and_start_a_scope_for_each_match(listings: list[str]) -> None:
    w = Told().watches(Store(), Scopes(("team-*", "!team-test-*")), on_demand=())
    w.start()
    assert listings == ["namespaces"] and not w.synced()
    w._namespaces_listed([namespace("team-a"), namespace("team-test-1"), namespace("kube-system")])
    assert w.scopes() == ["team-a"] and listings[1:] == ["DIJobs in team-a"]
    w._namespaces.list_first()  # type: ignore[union-attr]
    assert not w.synced()  # team-a's DIJobs are not listed yet
    w._informers["team-a"]["DIJob"].list_first()  # type: ignore[attr-defined]
    assert w.synced()
    w._namespace_event("ADDED", namespace("team-b"))
    w._namespace_event("ADDED", namespace("team-test-2"))
    w._namespace_event("ADDED", namespace("other"))
    assert w.scopes() == ["team-a", "team-b"]
    w._namespace_event("DELETED", namespace("team-a"))
    assert w.scopes() == ["team-b"]
    w._namespaces_listed([namespace("team-c")])  # a listing after 410 Gone: team-b is gone too
    assert w.scopes() == ["team-c"]
    w.close()


@pytest.mark.parametrize(
    ("namespaces", "matching", "not_matching"),
    [
        (("team-*",), ["team-a", "team-"], ["teams", "a-team-b"]),
        (("!kube-*",), ["default", "team-a"], ["kube-system"]),
        (("team-*", "!team-test-*", "ops"), ["team-a", "ops"], ["team-test-1", "opsx", "default"]),
        (("a",), ["a"], ["b", "aa"]),
    ],
)
def test_namespace_patterns_match_as_kopfs_did(
    namespaces: tuple[str, ...], matching: list[str], not_matching: list[str]
) -> None:
    scopes = Scopes(namespaces)
    assert [n for n in matching if scopes.matches(n)] == matching
    assert [n for n in not_matching if scopes.matches(n)] == []
    assert scopes.patterns == any("*" in n or n.startswith("!") for n in namespaces)
