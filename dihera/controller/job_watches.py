"""The watches of the jobs' pods, Workflows and membership ConfigMaps: an
:class:`~dihera.kube.informer.Informer` per kind and namespace (or one per kind for all), feeding the
watch cache and queueing the objects' jobs, outside kopf.

These kinds are nearly all the events the controller's watches deliver (in a burst of 44 jobs of 10
replicas, ~1,500 pod events and ~500 Workflow and ConfigMap events against ~100 of the DIJobs), and
kopf ran each event through its per-object workers, an indexer and an event handler; an informer
decodes an event with orjson and puts its slim copy in the cache, and that is all (docs/controller.md,
"Reading from watches"). kopf keeps the DIJobs (and Kueue's Workloads): their namespaces' globs, the
peering.

A namespace's watches start with the first reconcile of a job there (:meth:`JobWatches.ready` answers
False until the first listing of every kind is in the cache; the jobs it answered so are queued again as
soon as the last listing is in), and stop once the cache holds nothing of that namespace. A listing
(the first, or one after ``410 Gone``) replaces what the cache held of its kind there: objects it lacks
are dropped and their jobs reconciled.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubernetes import client

from dihera.constants import LABEL_JOB, MANAGED_BY
from dihera.controller.watch_cache import WatchCache
from dihera.kube.informer import Informer, ListCall

__all__ = ["JobWatches", "Watched", "managed_job_selector"]

log = logging.getLogger("dihera.controller")

#: Request the job's pass: ``(namespace, job, window)`` (:meth:`ReconcileQueue.request_paced`).
RequestPaced = Callable[[str, str, float], None]
#: Request the job's pass at once: ``(namespace, job)`` (:meth:`ReconcileQueue.request`).
Request = Callable[[str, str], None]


def managed_job_selector() -> str:
    """The label selector of the project's objects of a job (membership ConfigMaps, Kueue Workloads)."""
    return ",".join([*(f"{k}={v}" for k, v in MANAGED_BY.items()), LABEL_JOB])


@dataclass(frozen=True)
class Watched:
    """How one kind is watched: its event's pass comes ``window`` seconds later (paced,
    :meth:`ReconcileQueue.request_paced`), or at once when None; ``own_writes``: an event that only
    delivers the controller's own write (:meth:`WatchCache.own_write`) queues nothing."""

    kind: str
    window: float | None
    own_writes: bool = False


def _job(obj: Mapping[str, Any]) -> tuple[str, str] | None:
    meta = obj.get("metadata") or {}
    job = (meta.get("labels") or {}).get(LABEL_JOB)
    return (str(meta.get("namespace") or ""), str(job)) if job else None


def _list_calls(api: client.ApiClient, scope: str | None) -> dict[str, ListCall]:
    """kind → the list call of its objects labelled as the controller's (in ``scope``; None: everywhere)."""
    core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
    workflows = ("argoproj.io", "v1alpha1")
    if scope is None:
        return {
            "Pod": functools.partial(core.list_pod_for_all_namespaces, label_selector=LABEL_JOB),
            "Workflow": functools.partial(
                custom.list_cluster_custom_object, *workflows, "workflows", label_selector=LABEL_JOB
            ),
            "ConfigMap": functools.partial(
                core.list_config_map_for_all_namespaces, label_selector=managed_job_selector()
            ),
        }
    return {
        "Pod": functools.partial(core.list_namespaced_pod, scope, label_selector=LABEL_JOB),
        "Workflow": functools.partial(
            custom.list_namespaced_custom_object, *workflows, scope, "workflows", label_selector=LABEL_JOB
        ),
        "ConfigMap": functools.partial(core.list_namespaced_config_map, scope, label_selector=managed_job_selector()),
    }


class JobWatches:
    """The pods, Workflows and ConfigMaps labelled ``diengine/job`` of every namespace the controller
    reconciles a job in (``cluster_wide``: one watch per kind of all namespaces)."""

    def __init__(
        self,
        api: client.ApiClient,
        cache: WatchCache,
        request: Request,
        request_paced: RequestPaced,
        watched: tuple[Watched, ...],
        cluster_wide: bool,
        active: Callable[[], bool] = lambda: True,
        watch_seconds: int = 300,
    ) -> None:
        self._api = api
        self._cache = cache
        self._request = request
        self._request_paced = request_paced
        self._watched = {w.kind: w for w in watched}
        self._cluster_wide = cluster_wide
        self._active = active
        self._watch_seconds = watch_seconds
        self._lock = threading.Lock()
        #: scope → kind → its informer
        self._watches: dict[str | None, dict[str, Informer]] = {}
        #: scope → the jobs whose pass found it not yet listed: queued once every kind's listing is in
        self._waiting: dict[str | None, set[tuple[str, str]]] = {}
        self._closed = False

    def ready(self, namespace: str, job: str | None = None) -> bool:
        """Whether the cache holds the namespace's objects of every kind as listed; starts their watches
        if none run. When not, ``job`` is queued as soon as the last listing is in."""
        scope = None if self._cluster_wide else namespace
        with self._lock:
            if self._closed:
                return False
            watches = self._watches.get(scope)
            if watches is None or any(w.stopped for w in watches.values()):
                watches = self._start(scope, watches or {})
            synced = all(w.synced.is_set() for w in watches.values())
            if not synced and job is not None:
                self._waiting.setdefault(scope, set()).add((namespace, job))
        return synced

    def _synced(self, scope: str | None) -> None:
        """A kind's first listing is in: if it was the last, queue the jobs that waited for them."""
        with self._lock:
            watches = self._watches.get(scope) or {}
            if not all(w.synced.is_set() for w in watches.values()):
                return
            waiting = self._waiting.pop(scope, set())
        for namespace, job in sorted(waiting):
            self._request(namespace, job)

    def _start(self, scope: str | None, running: dict[str, Informer]) -> dict[str, Informer]:
        """Called with the lock held: starts the kinds' watches that do not run (or stopped)."""
        calls = _list_calls(self._api, scope)
        watches = dict(running)
        for kind in self._watched:
            if kind in watches and not watches[kind].stopped:
                continue
            name = f"{kind}s in {scope}" if scope else f"{kind}s"
            watch = Informer(
                calls[kind],
                name,
                on_listed=functools.partial(self._listed, scope, kind),
                on_event=functools.partial(self._event, scope, kind),
                watch_seconds=self._watch_seconds,
                on_synced=functools.partial(self._synced, scope),
            )
            watches[kind] = watch
            watch.start()
            log.debug("watching %s", name)
        self._watches[scope] = watches
        return watches

    def _queue(self, kind: str, jobs: set[tuple[str, str]]) -> None:
        if not self._active():
            return
        window = self._watched[kind].window
        for namespace, job in sorted(jobs):
            if window is None:
                self._request(namespace, job)
            else:
                self._request_paced(namespace, job, window)

    def _listed(self, scope: str | None, kind: str, objects: list[dict[str, Any]], _version: str) -> None:
        started = self._cache.now()
        for obj in objects:
            self._cache.put(kind, obj)
        gone = self._cache.sweep(kind, scope, {str(o["metadata"].get("uid")) for o in objects}, started)
        self._queue(kind, {key for key in map(_job, [*objects, *gone]) if key is not None})

    def _event(self, scope: str | None, kind: str, type_: str, obj: dict[str, Any]) -> None:
        if type_ == "DELETED":
            self._cache.drop(kind, obj)
        else:
            self._cache.put(kind, obj)
            if self._watched[kind].own_writes and self._cache.own_write(obj):
                return  # our own write coming back: the pass that made it saw it
        key = _job(obj)
        if key is not None:
            self._queue(kind, {key})
        if type_ == "DELETED" and scope is not None:
            self.release_if_idle(scope)

    def release_if_idle(self, namespace: str) -> None:
        """Stop the namespace's watches if the cache holds nothing of it (no DIJob, no job's object)."""
        if self._cluster_wide or self._cache.holds(namespace):
            return
        with self._lock:
            watches = self._watches.pop(namespace, None)
            self._waiting.pop(namespace, None)
        for watch in (watches or {}).values():
            watch.stop(wait=0)
        if watches:
            log.debug("nothing of a job left in %s: stopped watching it", namespace)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            watches = [w for kinds in self._watches.values() for w in kinds.values()]
            self._watches.clear()
            self._waiting.clear()
        for watch in watches:
            watch.stop()

    def watching(self) -> list[str]:
        """The scopes watched (``*`` for all namespaces), for logs and tests."""
        with self._lock:
            return sorted(scope or "*" for scope in self._watches)
