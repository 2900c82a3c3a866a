"""Which watch event queues which job's pass, and when (dihera/controller/triggers.py; no cluster)."""

from __future__ import annotations

from typing import Any

from dihera.controller.triggers import Triggers
from dihera.kube.watch import Store


class Queue:
    """Records what the work queue was asked: ``(namespace, job, window)``, window None for at once."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, float | None]] = []
        self.forgotten: list[tuple[str, str]] = []

    def request(self, namespace: str, name: str) -> None:
        self.requests.append((namespace, name, None))

    def request_paced(self, namespace: str, name: str, window: float = 0.0) -> None:
        self.requests.append((namespace, name, window))

    def forget(self, namespace: str, name: str) -> None:
        self.forgotten.append((namespace, name))


def obj(name: str, job: str | None = "j", version: str = "1", uid: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "uid": uid or name, "resourceVersion": version}
    if job is not None:
        meta["labels"] = {"diengine/job": job}
    return {"metadata": meta, "status": {}}


def triggers(store: Store | None = None, released: list[str] | None = None) -> tuple[Triggers, Queue]:
    queue = Queue()
    release = released.append if released is not None else (lambda ns: None)
    return Triggers(store or Store(), queue, pod_batch=0.5, release_if_idle=release), queue


def test_each_kind_queues_its_job_as_the_table_says() -> None:
    t, queue = triggers()
    t.on_event("DIJob", "MODIFIED", obj("j", job=None))
    t.on_event("Workload", "ADDED", obj("j-workload"))
    t.on_event("ConfigMap", "MODIFIED", obj("j-membership"))
    t.on_event("Workflow", "MODIFIED", obj("j"))
    t.on_event("Pod", "MODIFIED", obj("j-learner-0"))
    t.on_event("Pod", "ADDED", obj("loose", job=None))  # no job label: nobody's
    assert queue.requests == [("ns", "j", None)] * 3 + [("ns", "j", 0.0), ("ns", "j", 0.5)]


def test_the_event_of_our_own_write_queues_no_pass_but_anyone_elses_does() -> None:
    store = Store()
    t, queue = triggers(store)
    for kind in ("DIJob", "Workflow", "ConfigMap", "Workload"):
        name = "j" if kind in ("DIJob", "Workflow") else f"j-{kind.lower()}"
        uid = f"{kind}-uid"
        store.put(kind, obj(name, version="1", uid=uid))
        assert store.replace(kind, obj(name, "j", "1", uid), obj(name, "j", "2", uid))  # a pass wrote it
        store.put(kind, obj(name, version="2", uid=uid))  # the watch delivers it, then tells the triggers
        t.on_event(kind, "MODIFIED", obj(name, version="2", uid=uid))
        store.put(kind, obj(name, version="3", uid=uid))  # someone else's change
        t.on_event(kind, "MODIFIED", obj(name, version="3", uid=uid))
    assert queue.requests == [("ns", "j", None), ("ns", "j", 0.0), ("ns", "j", None), ("ns", "j", None)]


def test_a_deleted_dijob_is_forgotten_and_releases_its_namespace_and_a_deleted_object_queues_its_job() -> None:
    released: list[str] = []
    t, queue = triggers(released=released)
    t.on_event("DIJob", "DELETED", obj("j", job=None))
    assert queue.forgotten == [("ns", "j")] and queue.requests == [] and released == ["ns"]
    t.on_event("Workflow", "DELETED", obj("k", job="k"))
    assert queue.requests == [("ns", "k", 0.0)] and released == ["ns", "ns"]


def test_a_listing_queues_every_job_it_brought_or_dropped_once() -> None:
    t, queue = triggers()
    t.on_listed("Pod", [obj("j-0"), obj("j-1"), obj("k-0", job="k")], [obj("gone-0", job="gone")])
    assert queue.requests == [("ns", "gone", 0.5), ("ns", "j", 0.5), ("ns", "k", 0.5)]
    released: list[str] = []
    t, queue = triggers(released=released)
    t.on_listed("DIJob", [obj("a", job=None)], [obj("b", job=None)])  # b was deleted while the watch restarted
    assert queue.forgotten == [("ns", "b")] and queue.requests == [("ns", "a", None)] and released == ["ns"]


def test_jobs_that_waited_for_their_namespace_run_at_once_when_it_is_listed() -> None:
    t, queue = triggers()
    t.on_ready({("ns", "b"), ("ns", "a")})
    assert queue.requests == [("ns", "a", None), ("ns", "b", None)]
