"""Now and then, drop from the watch cache what was deleted while a watch was being restarted.

kopf restarts a watch (of DIJobs, Kueue Workloads) with a new listing after ``410 Gone`` or when
peering resumes the controller; an object deleted in between never gets a DELETED event and would stay
in the cache. Every ``interval`` seconds, one LIST per kind (per namespace the
cache holds objects in, or cluster-wide) tells what exists; the rest is dropped and its job
reconciled. These LISTs are the controller's only periodic reads; a reconcile makes none.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from dihera.constants import LABEL_JOB
from dihera.controller.job_watches import managed_job_selector
from dihera.controller.watch_cache import WatchCache

__all__ = ["SELECTORS", "Lister", "Resync", "sweep_once"]

log = logging.getLogger("dihera.controller")
#: The kinds a sweep covers by default; the controller passes those kopf watches
#: (:data:`dihera.controller.handlers.BASE_KINDS`; the job watches replace what they held on each listing).
BASE_KINDS = ("DIJob", "Workflow", "Pod", "ConfigMap")
#: kind → the label selector the controller watches it with.
SELECTORS = {
    "DIJob": "",
    "Workflow": LABEL_JOB,
    "Pod": LABEL_JOB,
    "ConfigMap": managed_job_selector(),
    "Workload": managed_job_selector(),
}


class Lister(Protocol):
    def list_uids(self, kind: str, namespace: str | None, selector: str = "") -> set[str]: ...


def _job_of(kind: str, obj: Mapping[str, Any]) -> tuple[str, str] | None:
    meta = obj.get("metadata") or {}
    namespace = str(meta.get("namespace") or "")
    if kind == "DIJob":
        return namespace, str(meta.get("name"))
    job = (meta.get("labels") or {}).get(LABEL_JOB)
    return (namespace, str(job)) if job else None


def sweep_once(
    cache: WatchCache, lister: Lister, cluster_wide: bool, kinds: tuple[str, ...] = BASE_KINDS
) -> set[tuple[str, str]]:
    """One sweep of every watched kind; returns the jobs whose objects were dropped."""
    touched: set[tuple[str, str]] = set()
    scopes: tuple[str | None, ...] = (None,) if cluster_wide else tuple(sorted(cache.namespaces()))
    for namespace in scopes:
        for kind in kinds:
            started = cache.now()
            listed = lister.list_uids(kind, namespace, SELECTORS[kind])
            for obj in cache.sweep(kind, namespace, listed, started):
                job = _job_of(kind, obj)
                if job is not None:
                    touched.add(job)
    return touched


class Resync:
    """A daemon thread sweeping the cache every ``interval`` seconds and requesting the jobs it touched."""

    def __init__(
        self,
        cache: WatchCache,
        lister: Lister,
        cluster_wide: bool,
        interval: float,
        request: Callable[[str, str], None],
        kinds: tuple[str, ...] = BASE_KINDS,
    ) -> None:
        self._cache, self._lister, self._cluster_wide = cache, lister, cluster_wide
        self._interval, self._request, self._kinds = interval, request, kinds
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="watch-cache-resync", daemon=True)

    def start(self) -> None:
        if self._interval > 0:
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                touched = sweep_once(self._cache, self._lister, self._cluster_wide, self._kinds)
            except Exception as err:  # the next round tries again; the cache stays as it is meanwhile
                log.warning("watch-cache resync failed: %s", err)
                continue
            for namespace, name in sorted(touched):
                log.info("dropped objects deleted while a watch restarted", extra={"job": f"{namespace}/{name}"})
                self._request(namespace, name)
