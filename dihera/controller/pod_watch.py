"""The watch of the jobs' pods: an :class:`~dihera.kube.informer.Informer` per namespace (or one for all),
feeding the watch cache and queueing the pods' jobs, outside kopf.

Pods are most of what the controller's watches deliver (in a burst of 44 jobs of 10 replicas, ~1,500
pod events against ~600 of every other kind), and kopf runs each event through its per-object
workers, an indexer and an event handler; this watch decodes a pod event and puts its slim copy in
the cache, and that is all (docs/controller.md, "Reading from watches").

A namespace's watch starts with the first reconcile of a job there (:meth:`PodWatches.ready` answers
False until its first listing is in the cache, and the reconcile waits for it), and stops once the
cache holds neither a DIJob nor a pod of that namespace. A listing (the first, or one after ``410
Gone``) replaces what the cache held: pods it lacks are dropped and their jobs reconciled.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from kubernetes import client

from dihera.constants import LABEL_JOB
from dihera.controller.watch_cache import WatchCache
from dihera.kube.informer import Informer

__all__ = ["PodWatches"]

log = logging.getLogger("dihera.controller")

#: Request the job's pass: ``(namespace, job, window)`` (:meth:`ReconcileQueue.request_paced`).
RequestPaced = Callable[[str, str, float], None]


def _job(obj: Mapping[str, Any]) -> tuple[str, str] | None:
    meta = obj.get("metadata") or {}
    job = (meta.get("labels") or {}).get(LABEL_JOB)
    return (str(meta.get("namespace") or ""), str(job)) if job else None


class PodWatches:
    """The pods labelled ``diengine/job`` of every namespace the controller reconciles a job in
    (``cluster_wide``: one watch of all namespaces)."""

    def __init__(
        self,
        api: client.ApiClient,
        cache: WatchCache,
        request: RequestPaced,
        window: float,
        cluster_wide: bool,
        active: Callable[[], bool] = lambda: True,
        watch_seconds: int = 300,
    ) -> None:
        self._core = client.CoreV1Api(api)
        self._cache = cache
        self._request = request
        self._window = window
        self._cluster_wide = cluster_wide
        self._active = active
        self._watch_seconds = watch_seconds
        self._lock = threading.Lock()
        self._watches: dict[str | None, Informer] = {}
        self._closed = False

    def ready(self, namespace: str) -> bool:
        """Whether the cache holds the namespace's pods as listed; starts their watch if none runs."""
        scope = None if self._cluster_wide else namespace
        with self._lock:
            if self._closed:
                return False
            watch = self._watches.get(scope)
            if watch is None or watch.stopped:
                watch = self._start(scope)
        return watch.synced.is_set()

    def _start(self, scope: str | None) -> Informer:
        """Called with the lock held."""
        if scope is None:
            call = functools.partial(self._core.list_pod_for_all_namespaces, label_selector=LABEL_JOB)
        else:
            call = functools.partial(self._core.list_namespaced_pod, scope, label_selector=LABEL_JOB)
        name = f"pods in {scope}" if scope else "pods"
        watch = Informer(
            call,
            name,
            on_listed=functools.partial(self._listed, scope),
            on_event=functools.partial(self._event, scope),
            watch_seconds=self._watch_seconds,
        )
        self._watches[scope] = watch
        watch.start()
        log.debug("watching %s", name)
        return watch

    def _listed(self, scope: str | None, pods: list[dict[str, Any]], _version: str) -> None:
        started = self._cache.now()
        for pod in pods:
            self._cache.put("Pod", pod)
        gone = self._cache.sweep("Pod", scope, {str(p["metadata"].get("uid")) for p in pods}, started)
        jobs = {key for key in map(_job, [*pods, *gone]) if key is not None}
        if self._active():
            for namespace, job in sorted(jobs):
                self._request(namespace, job, self._window)

    def _event(self, scope: str | None, kind: str, pod: dict[str, Any]) -> None:
        if kind == "DELETED":
            self._cache.drop("Pod", pod)
        else:
            self._cache.put("Pod", pod)
        key = _job(pod)
        if key is not None and self._active():
            self._request(key[0], key[1], self._window)
        if kind == "DELETED" and scope is not None:
            self.release_if_idle(scope)

    def release_if_idle(self, namespace: str) -> None:
        """Stop the namespace's watch if the cache holds neither a DIJob nor a pod there."""
        if self._cluster_wide or self._cache.holds(namespace):
            return
        with self._lock:
            watch = self._watches.pop(namespace, None)
        if watch is not None:
            watch.stop(wait=0)
            log.debug("no DIJob and no pod left in %s: stopped watching its pods", namespace)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            watches = list(self._watches.values())
            self._watches.clear()
        for watch in watches:
            watch.stop()

    def watching(self) -> list[str]:
        """The scopes watched (``*`` for all namespaces), for logs and tests."""
        with self._lock:
            return sorted(scope or "*" for scope in self._watches)
