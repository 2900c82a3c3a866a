"""What the watches delivered, for reconciles to read instead of asking the API server (no I/O here).

kopf watches the controller's DIJobs (and Kueue Workloads); :mod:`dihera.controller.job_watches` the
pods, Workflows and membership ConfigMaps labelled ``diengine/job``. Every event's object is put here
(slimmed, :mod:`dihera.controller.slim`) before the job is queued, so a reconcile reads what the event
brought. kopf calls the feeding functions as indexers, so it holds every handler until the initial
listing of its kinds is in; a reconcile waits for the first listings of its namespace's job objects
(:meth:`JobWatches.ready`): it never sees a job without its pods because they were not listed yet.

Objects are kept per uid: an object deleted and recreated under the same name is two entries until
the old one's DELETED event drops it, and :meth:`WatchCache.get` answers with the newest.
Thread-safe: kopf's event loop and the job watches write, the reconcile threads read.

A watch that restarts with a new listing (after ``410 Gone``, or when peering resumes the controller)
delivers no DELETED event for what was deleted in the gap. :meth:`WatchCache.sweep` drops such objects
given a fresh listing (:mod:`dihera.controller.resync` makes one now and then).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Collection, Mapping
from typing import Any

from dihera.constants import LABEL_JOB
from dihera.controller.slim import SLIMMERS

__all__ = ["KINDS", "WatchCache"]

KINDS = tuple(SLIMMERS)
#: How long after a write of ours the watch may take to deliver it: older versions delivered before it
#: are skipped meanwhile (a watch restarted with a new listing never delivers it: the pin then expires).
PIN_SECONDS = 30.0
#: resourceVersions remembered per object of those the watch delivered last.
DELIVERED_KEPT = 8
#: Deliveries of our own writes remembered until an event handler asks (:meth:`WatchCache.own_write`).
ECHOES_KEPT = 10_000
Key = tuple[str, str]  # (namespace, name)


def _key(obj: Mapping[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def _uid(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("uid") or "")


def _age(obj: Mapping[str, Any]) -> tuple[str, int]:
    """Order of two objects of one name: creation time, then resourceVersion (a tie-break only)."""
    meta = obj.get("metadata") or {}
    version = str(meta.get("resourceVersion") or "")
    return str(meta.get("creationTimestamp") or ""), int(version) if version.isdigit() else 0


def _job_of(obj: Mapping[str, Any]) -> str | None:
    return ((obj.get("metadata") or {}).get("labels") or {}).get(LABEL_JOB)


class WatchCache:
    """The latest slim copy of every watched DIJob, Workflow, pod and membership ConfigMap."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self._objects: dict[str, dict[Key, dict[str, dict[str, Any]]]] = {kind: {} for kind in KINDS}
        #: (namespace, job) → names of the job's pods
        self._pods_of: dict[Key, set[str]] = {}
        #: kind → uid → when an event last brought the object (``clock``)
        self._put_at: dict[str, dict[str, float]] = {kind: {} for kind in KINDS}
        #: uid → the resourceVersion of our last write (:meth:`replace`) until the watch delivers it, and
        #: until when older versions the watch delivers meanwhile are skipped
        self._pinned: dict[str, tuple[str, float]] = {}
        #: uid → the last resourceVersions the watch delivered
        self._delivered: dict[str, deque[str]] = {}
        #: (uid, resourceVersion) of events that delivered our own write (:meth:`own_write`)
        self._echoes: set[tuple[str, str]] = set()

    def put(self, kind: str, obj: Mapping[str, Any]) -> None:
        """An object as a watch event delivered it (added, modified, or listed)."""
        slim = SLIMMERS[kind](obj)
        key = _key(slim)
        version = str(slim["metadata"].get("resourceVersion") or "")
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
            self._objects[kind].setdefault(key, {})[_uid(slim)] = slim
            self._put_at[kind][_uid(slim)] = self._clock()
            job = _job_of(slim)
            if kind == "Pod" and job:
                self._pods_of.setdefault((key[0], job), set()).add(key[1])

    def drop(self, kind: str, obj: Mapping[str, Any]) -> None:
        """A DELETED event: forget that object (a newer one of the same name stays)."""
        key = _key(obj)
        with self._lock:
            same_name = self._objects[kind].get(key)
            if same_name is None:
                return
            same_name.pop(_uid(obj), None)
            self._put_at[kind].pop(_uid(obj), None)
            self._pinned.pop(_uid(obj), None)
            self._delivered.pop(_uid(obj), None)
            if same_name:
                return
            del self._objects[kind][key]
            job = _job_of(obj)
            if kind == "Pod" and job:
                names = self._pods_of.get((key[0], job), set())
                names.discard(key[1])
                if not names:
                    self._pods_of.pop((key[0], job), None)

    def replace(self, kind: str, read: Mapping[str, Any], written: Mapping[str, Any]) -> bool:
        """After a write made from ``read``: ``written`` (the API server's answer) goes into the cache at
        once, so the next pass reads its own write even before the watch delivers it. True if it did.

        Nothing changes if the watch already delivered ``written`` (what the cache holds is then as new
        or newer), or if the object is no longer in the cache (deleted). Otherwise everything the cache
        holds is older than ``written`` (a watch delivers in order), and until the watch delivers
        ``written`` itself (or :data:`PIN_SECONDS` pass) the versions it delivers before are skipped, so
        the cache never goes back to a status older than the one just written.
        """
        key, uid = _key(read), _uid(read)
        version = str((written.get("metadata") or {}).get("resourceVersion") or "")
        with self._lock:
            if self._objects[kind].get(key, {}).get(uid) is None or version in self._delivered.get(uid, ()):
                return False
            self._objects[kind][key][uid] = SLIMMERS[kind](written)
            self._pinned[uid] = (version, self._clock() + PIN_SECONDS)
            return True

    def own_write(self, obj: Mapping[str, Any]) -> bool:
        """Whether this event delivered our own last write of the object (:meth:`replace`): the cache held it
        already, so the event brings nothing a pass has not seen. Answers True once per write."""
        key = (_uid(obj), str((obj.get("metadata") or {}).get("resourceVersion") or ""))
        with self._lock:
            if key in self._echoes:
                self._echoes.discard(key)
                return True
            return False

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        with self._lock:
            same_name = self._objects[kind].get((namespace, name))
            if not same_name:
                return None
            return max(same_name.values(), key=_age)

    def pods(self, namespace: str, job: str) -> list[dict[str, Any]]:
        """The pods labelled ``diengine/job=<job>`` in the namespace, in name order."""
        with self._lock:
            names = sorted(self._pods_of.get((namespace, job), ()))
            found = [self._objects["Pod"].get((namespace, n)) or {} for n in names]
            return [pod for same_name in found for pod in same_name.values()]

    def of_job(self, kind: str, namespace: str, job: str) -> list[dict[str, Any]]:
        """The ``kind`` objects labelled ``diengine/job=<job>`` in the namespace (a scan: for kinds with few
        objects, such as Kueue Workloads)."""
        with self._lock:
            return [
                obj
                for (ns, _), same_name in self._objects[kind].items()
                if ns == namespace
                for obj in same_name.values()
                if _job_of(obj) == job
            ]

    def now(self) -> float:
        """The cache's clock: read it before a listing made for :meth:`sweep`."""
        return self._clock()

    def namespaces(self) -> set[str]:
        """Every namespace the cache holds an object in."""
        with self._lock:
            return {ns for objs in self._objects.values() for ns, _ in objs}

    def holds(self, namespace: str) -> bool:
        """Whether the cache holds anything in the namespace (a DIJob, a job's pod, Workflow, ConfigMap...)."""
        with self._lock:
            return any(ns == namespace for ns, _ in self._pods_of) or any(
                ns == namespace for kind, objs in self._objects.items() if kind != "Pod" for ns, _ in objs
            )

    def sweep(
        self, kind: str, namespace: str | None, listed: Collection[str], listed_at: float
    ) -> list[dict[str, Any]]:
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
