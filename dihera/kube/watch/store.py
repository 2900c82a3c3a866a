"""What the watches delivered, for the controller and the di-server to read instead of asking the API
server (no I/O here): the store of the watch layer (:mod:`dihera.kube.watch`).

Every object a watch brings is put here (slimmed, :mod:`dihera.kube.watch.slim`) before anything is
told about it, so a reader reads what the event brought. Objects are indexed by job: a DIJob by its
name, every other kind by its ``diengine/job`` label (:func:`job_of`; :meth:`Store.of_job`, :meth:`Store.pods`).

Objects are kept per uid: an object deleted and recreated under the same name is two entries until
the old one's DELETED event drops it, and :meth:`Store.get` answers with the newest.
Thread-safe: the informers' threads write, the reconcile threads and the di-server's requests read.

A watch that restarts with a new listing (after ``410 Gone``) delivers no DELETED event for what was
deleted in the gap: the listing replaces what the store held of its kind (:meth:`Store.sweep`).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, Literal, cast, overload

from dihera.constants import LABEL_JOB
from dihera.kube.watch.kinds import JobKey
from dihera.kube.watch.slim import SLIMMERS
from dihera.objects import metadata
from dihera.shapes.configmap import ConfigMap
from dihera.shapes.pod import Pod
from dihera.shapes.service import Service
from dihera.shapes.workflow import Workflow

__all__ = ["KINDS", "Store", "job_of"]

KINDS = tuple(SLIMMERS)
#: How long after a write of ours the watch may take to deliver it: older versions delivered before it
#: are skipped meanwhile (a watch restarted with a new listing never delivers it: the pin then expires).
PIN_SECONDS = 30.0
#: resourceVersions remembered per object of those the watch delivered last.
DELIVERED_KEPT = 8
#: Deliveries of our own writes remembered until an event handler asks (:meth:`Store.own_write`).
ECHOES_KEPT = 10_000
Key = tuple[str, str]  # (namespace, name)


def _key(obj: Mapping[str, object]) -> Key:
    meta = metadata(obj)
    return meta.get("namespace", ""), meta.get("name", "")


def _uid(obj: Mapping[str, object]) -> str:
    return metadata(obj).get("uid", "")


def _version(obj: Mapping[str, object]) -> str:
    return metadata(obj).get("resourceVersion", "")


def _age(obj: Mapping[str, object]) -> tuple[str, int]:
    """Order of two objects of one name: creation time, then resourceVersion (a tie-break only)."""
    version = _version(obj)
    return metadata(obj).get("creationTimestamp", ""), int(version) if version.isdigit() else 0


def job_of(kind: str, obj: Mapping[str, object]) -> JobKey | None:
    """The job an object belongs to: a DIJob is its own, the others name it in their ``diengine/job`` label."""
    meta = metadata(obj)
    namespace = meta.get("namespace", "")
    if kind == "DIJob":
        return (namespace, meta["name"]) if meta.get("name") else None
    job = meta.get("labels", {}).get(LABEL_JOB)
    return (namespace, job) if job else None


def _job_of(kind: str, obj: Mapping[str, object]) -> str | None:
    key = job_of(kind, obj)
    return key[1] if key is not None else None


class Store:
    """The latest slim copy of every watched DIJob, Workflow, pod, membership ConfigMap and Kueue Workload."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self._objects: dict[str, dict[Key, dict[str, Mapping[str, object]]]] = {kind: {} for kind in KINDS}
        #: kind → (namespace, job) → names of the job's objects of that kind
        self._by_job: dict[str, dict[Key, set[str]]] = {kind: {} for kind in KINDS}
        #: kind → uid → when an event last brought the object (``clock``)
        self._put_at: dict[str, dict[str, float]] = {kind: {} for kind in KINDS}
        #: uid → the resourceVersion of our last write (:meth:`replace`) until the watch delivers it, and
        #: until when older versions the watch delivers meanwhile are skipped
        self._pinned: dict[str, tuple[str, float]] = {}
        #: uid → the last resourceVersions the watch delivered
        self._delivered: dict[str, deque[str]] = {}
        #: (uid, resourceVersion) of events that delivered our own write (:meth:`own_write`)
        self._echoes: set[tuple[str, str]] = set()

    def put(self, kind: str, obj: Mapping[str, object]) -> None:
        """An object as a watch event delivered it (added, modified, or listed)."""
        slim = SLIMMERS[kind](obj)
        key = _key(slim)
        version = _version(slim)
        uid = _uid(slim)
        with self._lock:
            self._delivered.setdefault(uid, deque(maxlen=DELIVERED_KEPT)).append(version)
            pin = self._pinned.get(uid)
            if pin is not None:
                if version != pin[0] and self._clock() < pin[1]:
                    return  # older than our write: the watch is catching up with it
                del self._pinned[uid]
                if version == pin[0]:
                    if len(self._echoes) >= ECHOES_KEPT:  # never asked about (not a watched job's kind)
                        self._echoes.clear()
                    self._echoes.add((uid, version))
            same_name = self._objects[kind].setdefault(key, {})
            before = same_name.get(uid)
            same_name[uid] = slim
            self._put_at[kind][uid] = self._clock()
            job = _job_of(kind, slim)
            if before is not None and _job_of(kind, before) != job:  # relabelled: no longer its old job's
                self._unindex(kind, key, _job_of(kind, before))
            if job:
                self._by_job[kind].setdefault((key[0], job), set()).add(key[1])

    def _unindex(self, kind: str, key: Key, job: str | None) -> None:
        """Called with the lock held: the name ``key`` leaves ``job``'s index unless another object of that
        name (another uid) still belongs to it."""
        if not job or any(_job_of(kind, o) == job for o in self._objects[kind].get(key, {}).values()):
            return
        names = self._by_job[kind].get((key[0], job), set())
        names.discard(key[1])
        if not names:
            self._by_job[kind].pop((key[0], job), None)

    def drop(self, kind: str, obj: Mapping[str, object]) -> None:
        """A DELETED event: forget that object (a newer one of the same name stays)."""
        key = _key(obj)
        with self._lock:
            same_name = self._objects[kind].get(key)
            if same_name is None:
                return
            removed = same_name.pop(_uid(obj), None)
            self._put_at[kind].pop(_uid(obj), None)
            self._pinned.pop(_uid(obj), None)
            self._delivered.pop(_uid(obj), None)
            self._unindex(kind, key, _job_of(kind, removed or obj))
            if not same_name:
                del self._objects[kind][key]

    def replace(self, kind: str, read: Mapping[str, object], written: Mapping[str, object]) -> bool:
        """After a write made from ``read``: ``written`` (the API server's answer) goes into the cache at
        once, so the next pass reads its own write even before the watch delivers it. True if it did.

        Nothing changes if the watch already delivered ``written`` (what the cache holds is then as new
        or newer), or if the object is no longer in the cache (deleted). Otherwise everything the cache
        holds is older than ``written`` (a watch delivers in order), and until the watch delivers
        ``written`` itself (or :data:`PIN_SECONDS` pass) the versions it delivers before are skipped, so
        the cache never goes back to a status older than the one just written.
        """
        key, uid = _key(read), _uid(read)
        version = _version(written)
        with self._lock:
            if self._objects[kind].get(key, {}).get(uid) is None or version in self._delivered.get(uid, ()):
                return False
            self._objects[kind][key][uid] = SLIMMERS[kind](written)
            self._pinned[uid] = (version, self._clock() + PIN_SECONDS)
            return True

    def own_write(self, obj: Mapping[str, object]) -> bool:
        """Whether this event delivered our own last write of the object (:meth:`replace`): the cache held it
        already, so the event brings nothing a pass has not seen. Answers True once per write."""
        key = (_uid(obj), _version(obj))
        with self._lock:
            if key in self._echoes:
                self._echoes.discard(key)
                return True
            return False

    # The kinds' typed views (dihera.shapes: what their slimmer keeps). DIJob and Workload are read as raw
    # dicts until their readers take dihera.shapes' views.
    @overload
    def get(self, kind: Literal["Pod"], namespace: str, name: str) -> Pod | None: ...
    @overload
    def get(self, kind: Literal["Workflow"], namespace: str, name: str) -> Workflow | None: ...
    @overload
    def get(self, kind: Literal["ConfigMap"], namespace: str, name: str) -> ConfigMap | None: ...
    @overload
    def get(self, kind: Literal["Service"], namespace: str, name: str) -> Service | None: ...
    @overload
    def get(self, kind: Literal["DIJob", "Workload"], namespace: str, name: str) -> dict[str, Any] | None: ...
    def get(self, kind: str, namespace: str, name: str) -> Mapping[str, object] | None:
        with self._lock:
            same_name = self._objects[kind].get((namespace, name))
            if not same_name:
                return None
            return max(same_name.values(), key=_age)

    def labelled(
        self, kind: Literal["DIJob", "Workload"], namespace: str, label: str, value: str
    ) -> list[dict[str, Any]]:
        """The ``kind`` objects of the namespace whose label ``label`` is ``value``, in name order (a scan of
        the namespace's objects of that kind: for rare look-ups, such as a followed link)."""
        with self._lock:
            return [
                cast(dict[str, Any], obj)  # a DIJob's slim copy is the whole object but managedFields
                for (ns, _), same_name in sorted(self._objects[kind].items())
                if ns == namespace
                for obj in same_name.values()
                if metadata(obj).get("labels", {}).get(label) == value
            ]

    def pods(self, namespace: str, job: str) -> list[Pod]:
        """The pods labelled ``diengine/job=<job>`` in the namespace, in name order."""
        return self.of_job("Pod", namespace, job)

    @overload
    def of_job(self, kind: Literal["Pod"], namespace: str, job: str) -> list[Pod]: ...
    @overload
    def of_job(self, kind: Literal["Workflow"], namespace: str, job: str) -> list[Workflow]: ...
    @overload
    def of_job(self, kind: Literal["ConfigMap"], namespace: str, job: str) -> list[ConfigMap]: ...
    @overload
    def of_job(self, kind: Literal["Service"], namespace: str, job: str) -> list[Service]: ...
    @overload
    def of_job(self, kind: Literal["Workload"], namespace: str, job: str) -> list[dict[str, Any]]: ...
    def of_job(self, kind: str, namespace: str, job: str) -> Sequence[Mapping[str, object]]:
        """The ``kind`` objects of the job in the namespace (labelled ``diengine/job=<job>``), in name order."""
        with self._lock:
            names = sorted(self._by_job[kind].get((namespace, job), ()))
            found = [self._objects[kind].get((namespace, n)) or {} for n in names]
            return [obj for same_name in found for obj in same_name.values()]

    def now(self) -> float:
        """The cache's clock: read it before a listing made for :meth:`sweep`."""
        return self._clock()

    def namespaces(self) -> set[str]:
        """Every namespace the store holds an object in."""
        with self._lock:
            return {ns for jobs in self._by_job.values() for ns, _ in jobs}

    def holds(self, namespace: str) -> bool:
        """Whether the cache holds anything in the namespace (a DIJob, a job's pod, Workflow, ConfigMap...)."""
        with self._lock:
            return any(ns == namespace for jobs in self._by_job.values() for ns, _ in jobs)

    def sweep(
        self, kind: str, namespace: str | None, listed: Collection[str], listed_at: float
    ) -> list[Mapping[str, object]]:
        """Drop the ``kind`` objects (of ``namespace``; None: all) that a listing started at ``listed_at``
        (:meth:`now`) did not return, unless an event brought them after it started. Returns them.
        """
        with self._lock:
            gone = [
                obj
                for (ns, _), same_name in self._objects[kind].items()
                if namespace is None or ns == namespace
                for uid, obj in same_name.items()
                if uid not in listed and self._put_at[kind].get(uid, 0.0) < listed_at
            ]
        for obj in gone:
            self.drop(kind, obj)
        return gone

    def sizes(self) -> dict[str, int]:
        """Kind → objects held."""
        with self._lock:
            return {kind: sum(len(v) for v in objs.values()) for kind, objs in self._objects.items()}
