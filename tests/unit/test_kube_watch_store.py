"""The watch cache: latest copy per object, pods by job, deletes by uid, writes replace only what they read."""

from __future__ import annotations

from typing import Any

from dihera.kube.watch import Store


def obj(
    name: str, uid: str, rv: str = "1", job: str | None = None, created: str = "2026-01-01T00:00:00Z"
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": "ns",
        "uid": uid,
        "resourceVersion": rv,
        "creationTimestamp": created,
    }
    if job is not None:
        meta["labels"] = {"diengine/job": job}
    return {"metadata": meta, "spec": {}, "status": {"phase": "Running"}}


def test_the_latest_event_wins_and_objects_are_slimmed() -> None:
    cache = Store()
    first = obj("j", "u1", "1")
    first["metadata"]["managedFields"] = [{"manager": "m"}]
    cache.put("DIJob", first)
    cache.put("DIJob", {**obj("j", "u1", "2"), "status": {"phase": "Succeeded"}})
    got = cache.get("DIJob", "ns", "j")
    assert got is not None and got["metadata"]["resourceVersion"] == "2" and got["status"]["phase"] == "Succeeded"
    assert cache.get("DIJob", "ns", "other") is None and cache.get("DIJob", "other", "j") is None
    assert "managedFields" not in cache.get("DIJob", "ns", "j")["metadata"]  # type: ignore[index]


def test_pods_are_found_by_their_job_label() -> None:
    cache = Store()
    cache.put("Pod", obj("a-1", "p1", job="a"))
    cache.put("Pod", obj("a-0", "p0", job="a"))
    cache.put("Pod", obj("b-0", "p2", job="b"))
    cache.put("Pod", obj("loose", "p3"))
    assert [p["metadata"]["name"] for p in cache.pods("ns", "a")] == ["a-0", "a-1"]
    cache.drop("Pod", obj("a-0", "p0", job="a"))
    assert [p["metadata"]["name"] for p in cache.pods("ns", "a")] == ["a-1"]
    cache.drop("Pod", obj("a-1", "p1", job="a"))
    assert cache.pods("ns", "a") == [] and cache.sizes()["Pod"] == 2


def test_objects_are_found_by_any_label_in_their_namespace() -> None:
    cache = Store()
    for name, uid, pod in (("t1", "u1", "pod-1"), ("t0", "u0", "pod-0"), ("t2", "u2", "pod-1")):
        doc = obj(name, uid)
        doc["metadata"]["labels"] = {"diengine/trial-pod": pod}
        cache.put("DIJob", doc)
    cache.put("DIJob", obj("plain", "u3"))
    assert [j["metadata"]["name"] for j in cache.labelled("DIJob", "ns", "diengine/trial-pod", "pod-1")] == ["t1", "t2"]
    assert cache.labelled("DIJob", "other", "diengine/trial-pod", "pod-1") == []
    assert cache.labelled("DIJob", "ns", "diengine/trial-pod", "pod-9") == []


def test_a_recreated_object_survives_the_late_delete_of_its_predecessor() -> None:
    cache = Store()
    cache.put("Workflow", obj("j", "old", "5", job="j", created="2026-01-01T00:00:00Z"))
    cache.put("Workflow", obj("j", "new", "9", job="j", created="2026-01-01T00:00:07Z"))
    assert cache.get("Workflow", "ns", "j")["metadata"]["uid"] == "new"  # type: ignore[index]
    cache.drop("Workflow", obj("j", "old", "5", job="j"))
    assert cache.get("Workflow", "ns", "j")["metadata"]["uid"] == "new"  # type: ignore[index]
    cache.drop("Workflow", obj("j", "gone-long-ago", "1", job="j"))  # a delete of an unknown uid changes nothing
    assert cache.sizes()["Workflow"] == 1


def test_a_write_goes_into_the_cache_unless_the_watch_delivered_it_already() -> None:
    cache = Store()
    cache.put("DIJob", obj("j", "u", "1"))
    read = cache.get("DIJob", "ns", "j")
    assert read is not None
    assert cache.replace("DIJob", read, {**obj("j", "u", "2"), "status": {"phase": "Starting"}})
    assert cache.get("DIJob", "ns", "j")["status"] == {"phase": "Starting"}  # type: ignore[index]
    # the watch delivered versions 2, 4 and 5 before the answer to the write that made 4 came back
    cache.put("DIJob", {**obj("j", "u", "2"), "status": {"phase": "Starting"}})
    cache.put("DIJob", {**obj("j", "u", "4"), "status": {"phase": "Running"}})
    cache.put("DIJob", {**obj("j", "u", "5"), "status": {"phase": "Running", "profilings": {}}})
    assert not cache.replace("DIJob", obj("j", "u", "3"), {**obj("j", "u", "4"), "status": {"phase": "Running"}})
    assert cache.get("DIJob", "ns", "j")["metadata"]["resourceVersion"] == "5"  # type: ignore[index]
    # a write about an object the cache no longer holds does not bring it back
    cache.drop("DIJob", obj("j", "u", "5"))
    assert not cache.replace("DIJob", obj("j", "u", "5"), obj("j", "u", "6"))
    assert cache.get("DIJob", "ns", "j") is None


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_a_sweep_drops_what_a_fresh_listing_lacks_unless_an_event_brought_it_since() -> None:
    clock = Clock()
    cache = Store(clock)
    cache.put("Pod", obj("a-0", "p0", job="a"))  # deleted while the watch restarted: no DELETED event
    cache.put("Pod", obj("a-1", "p1", job="a"))
    cache.put(
        "Pod",
        {**obj("b-0", "p2", job="b"), "metadata": {**obj("b-0", "p2", job="b")["metadata"], "namespace": "other"}},
    )
    clock.t = 10.0
    started = cache.now()
    clock.t = 11.0
    cache.put("Pod", obj("a-2", "p3", job="a"))  # created after the listing was taken
    gone = cache.sweep("Pod", "ns", {"p1"}, started)
    assert [p["metadata"]["name"] for p in gone] == ["a-0"]
    assert [p["metadata"]["name"] for p in cache.pods("ns", "a")] == ["a-1", "a-2"]
    assert cache.pods("other", "b") != []  # another namespace's listing decides about it
    assert cache.namespaces() == {"ns", "other"}


def test_the_watch_catching_up_with_our_writes_never_takes_the_cache_back() -> None:
    clock = Clock()
    cache = Store(clock)
    cache.put("DIJob", {**obj("j", "u", "1"), "status": {"phase": "Pending"}})
    # our writes 1 -> 2 and 3 -> 4; version 3 is another writer's (no precondition on our status writes)
    assert cache.replace("DIJob", obj("j", "u", "1"), {**obj("j", "u", "2"), "status": {"phase": "Starting"}})
    assert cache.replace("DIJob", obj("j", "u", "2"), {**obj("j", "u", "4"), "status": {"phase": "Running"}})
    for version, phase in (("2", "Starting"), ("3", "Starting")):  # the watch delivers the older ones now
        cache.put("DIJob", {**obj("j", "u", version), "status": {"phase": phase}})
        assert cache.get("DIJob", "ns", "j")["status"]["phase"] == "Running"  # type: ignore[index]
    cache.put("DIJob", {**obj("j", "u", "4"), "status": {"phase": "Running"}})
    cache.put("DIJob", {**obj("j", "u", "5"), "status": {"phase": "Running", "profilings": {"a": 1}}})
    assert cache.get("DIJob", "ns", "j")["metadata"]["resourceVersion"] == "5"  # type: ignore[index]


def test_a_write_the_watch_never_delivers_pins_the_cache_for_a_while_only() -> None:
    clock = Clock()
    cache = Store(clock)
    cache.put("DIJob", obj("j", "u", "1"))
    assert cache.replace("DIJob", obj("j", "u", "1"), obj("j", "u", "2"))
    cache.put("DIJob", obj("j", "u", "9"))  # a new listing after a restarted watch: skipped while pinned
    assert cache.get("DIJob", "ns", "j")["metadata"]["resourceVersion"] == "2"  # type: ignore[index]
    clock.t = 31.0
    cache.put("DIJob", obj("j", "u", "9"))
    assert cache.get("DIJob", "ns", "j")["metadata"]["resourceVersion"] == "9"  # type: ignore[index]


def test_the_event_delivering_our_own_write_is_told_apart_once() -> None:
    cache = Store()
    cache.put("DIJob", obj("j", "u", "1"))
    assert cache.replace("DIJob", obj("j", "u", "1"), obj("j", "u", "2"))
    cache.put("DIJob", obj("j", "u", "2"))  # the watch delivers our write
    assert cache.own_write(obj("j", "u", "2"))
    assert not cache.own_write(obj("j", "u", "2"))  # once
    cache.put("DIJob", obj("j", "u", "3"))  # another writer's change
    assert not cache.own_write(obj("j", "u", "3"))
    cache.put("DIJob", obj("k", "v", "4"))  # never written by us
    assert not cache.own_write(obj("k", "v", "4"))
