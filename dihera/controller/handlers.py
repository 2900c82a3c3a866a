"""kopf handlers: every event about a DIJob or (queued with Kueue) its Workload re-syncs that job. The
jobs' pods, Workflows and membership ConfigMaps are watched outside kopf
(:mod:`dihera.controller.job_watches`): they are nearly all the events, and kopf's per-event machinery
was most of the controller's CPU.

Only watch-event and indexing handlers are used, so kopf itself writes nothing to the objects (no
finalizers, no state annotations): the controller's own writes are the objects it creates, the status,
events and cleanup. Kueue Workloads are watched with a server-side label selector
``app.kubernetes.io/managed-by=dihera,diengine/job``.

Each event's object goes into the :class:`~dihera.controller.watch_cache.WatchCache` before the job is
queued. The feeding functions are kopf indexers (returning nothing, so kopf's own index stays empty):
kopf then starts no handler until the initial listing of every kind has been fed in.

An event that only delivers the controller's own write (a status patch, :meth:`WatchCache.own_write`)
queues nothing: the pass that wrote it already decided from it, and a big job's status writes would
otherwise each cost one more pass over all its replicas.

Every handler is a coroutine that only feeds the cache and queues the job
(:class:`~dihera.controller.queue.ReconcileQueue` reconciles on its own threads): kopf's per-object
workers never wait for a reconcile, so no backlog of whole decoded objects builds up behind a burst.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

import kopf

from dihera.constants import KUEUE_GROUP, KUEUE_VERSION, LABEL_JOB
from dihera.controller.job_watches import managed_job_selector
from dihera.controller.queue import ReconcileQueue
from dihera.controller.watch_cache import WatchCache
from dihera.schema import GROUP, PLURAL, VERSION

__all__ = ["BASE_KINDS", "RESOURCES", "build_registry", "configure_watching"]

log = logging.getLogger("dihera.controller")


def configure_watching(settings: Any, kueue: bool = False) -> None:
    """Server-side label selectors: with ``kueue``, the controller never lists Workloads that are not a
    DIJob's."""
    if kueue:
        settings.watching.label_selectors[KUEUE_GROUP, "workloads"] = managed_job_selector()


#: kind → (group, version, plural) as kopf names them.
RESOURCES = {
    "DIJob": (GROUP, VERSION, PLURAL),
    "Workload": (KUEUE_GROUP, KUEUE_VERSION, "workloads"),
}
#: The kinds kopf watches without Kueue (``Workload`` joins them with ``--kueue``: its CRD may not exist);
#: the jobs' pods, Workflows and ConfigMaps are watched by :class:`~dihera.controller.job_watches.JobWatches`.
BASE_KINDS = ("DIJob",)


def _feed(registry: Any, cache: WatchCache, kind: str) -> None:
    """Register the indexer that puts every listed, added or modified ``kind`` into ``cache``."""
    group, version, plural = RESOURCES[kind]
    labels = None if kind == "DIJob" else {LABEL_JOB: kopf.PRESENT}

    async def feed(body: Mapping[str, Any], **_: Any) -> None:
        cache.put(kind, body)

    kopf.index(group, version, plural, labels=labels, registry=registry, id=f"watch-cache-{kind}")(feed)


def _on_event(registry: Any, queue: ReconcileQueue, cache: WatchCache, kind: str) -> None:
    """Every event of a job's ``kind`` object (labelled ``diengine/job``) queues that job at once."""
    group, version, plural = RESOURCES[kind]

    async def on_event(
        type: str, body: Mapping[str, Any], labels: Mapping[str, str], namespace: str | None, **_: Any
    ) -> None:
        if type == "DELETED":
            cache.drop(kind, body)
        elif cache.own_write(body):
            return  # our own write coming back: the pass that made it saw it
        queue.request(namespace or "default", labels[LABEL_JOB])

    kopf.on.event(group, version, plural, labels={LABEL_JOB: kopf.PRESENT}, registry=registry, id=f"{kind}-event")(
        on_event
    )


def build_registry(
    queue: ReconcileQueue,
    cache: WatchCache,
    login: Callable[..., Any],
    on_startup: Callable[..., Any] | None = None,
    on_cleanup: Callable[..., Any] | None = None,
    kinds: tuple[str, ...] = BASE_KINDS,
    on_job_deleted: Callable[[str], None] = lambda namespace: None,
) -> Any:
    """A fresh ``kopf.OperatorRegistry`` (no global registry) feeding ``cache`` and wired to ``queue``;
    ``kinds``: what is watched (:data:`BASE_KINDS`, and ``Workload`` when the controller queues with Kueue);
    every event queues the job at once. ``on_job_deleted(namespace)`` follows a DIJob's deletion (the job
    watches of a namespace left empty stop)."""
    registry = kopf.OperatorRegistry()
    for kind in kinds:
        _feed(registry, cache, kind)
    kopf.on.login(registry=registry)(login)
    if on_startup is not None:
        kopf.on.startup(registry=registry)(on_startup)
    if on_cleanup is not None:
        kopf.on.cleanup(registry=registry)(on_cleanup)

    @kopf.on.event(GROUP, VERSION, PLURAL, registry=registry)
    async def dijob_event(type: str, body: Mapping[str, Any], name: str, namespace: str | None, **_: Any) -> None:
        namespace = namespace or "default"
        if type == "DELETED":
            cache.drop("DIJob", body)
            queue.forget(namespace, name)
            log.info("DIJob deleted; its objects go with it (ownerReferences)", extra={"job": f"{namespace}/{name}"})
            on_job_deleted(namespace)
        elif cache.own_write(body):
            return  # our own status write coming back: the pass that made it saw it
        queue.request(namespace, name)

    for kind in kinds:
        if kind != "DIJob":
            _on_event(registry, queue, cache, kind)
    del dijob_event
    return registry
