"""Assemble and run the controller: one settings object in, kopf's operator loop out."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from typing import Any

import kopf

from dihera.constants import FIELD_MANAGER_CONTROLLER
from dihera.controller.handlers import BASE_KINDS, build_registry, configure_watching
from dihera.controller.job_watches import JobWatches, Watched
from dihera.controller.metrics import Metrics
from dihera.controller.peering import PeeringGate
from dihera.controller.queue import ReconcileQueue
from dihera.controller.queueing import Queueing
from dihera.controller.reconcile import Reconciler, utc_now
from dihera.controller.resync import Resync
from dihera.controller.server import Readiness, start_endpoints
from dihera.controller.settings import ControllerSettings
from dihera.controller.watch_cache import WatchCache
from dihera.kube import api_client
from dihera.kube.connection import kopf_connection
from dihera.kube.events import EventRecorder
from dihera.kube.jobs import JobStore
from dihera.kube.objects import ObjectStore
from dihera.kube.scale_executor import JobScaler
from dihera.kube.workloads import QuotaGate, WorkloadStore
from dihera.logs import configure_logging

__all__ = ["NoDiffBase", "kopf_settings", "run_controller"]

log = logging.getLogger("dihera.controller")


class NoDiffBase(kopf.DiffBaseStorage):
    """No diff base: kopf would deep-copy every event's object to find what changed for ``on.create`` /
    ``on.update`` handlers. The controller has none (only event and index handlers), so nothing reads the
    copy; in the profile of a 44 x 10 burst that copying was half of kopf's event loop time."""

    def build(self, *, body: Any, extra_fields: Any = None) -> Any:
        return {}

    def fetch(self, *, body: Any) -> Any:
        return None

    def store(self, *, body: Any, patch: Any, essence: Any) -> None:
        return None


def kopf_settings(settings: ControllerSettings) -> Any:
    """kopf's OperatorSettings for ours: no event posting by kopf, no diff base, server-side selectors.
    (The handlers are coroutines: kopf's thread pool runs only the login.)"""
    kop = kopf.OperatorSettings()
    configure_watching(kop, kueue=settings.kueue is not None)
    kop.persistence.diffbase_storage = NoDiffBase()
    kop.posting.enabled = False  # the controller posts its own Events about DIJobs
    kop.peering.name = settings.peering
    kop.peering.standalone = settings.standalone
    kop.peering.priority = settings.priority
    kop.peering.lifetime = settings.peering_lifetime
    kop.peering.stealth = True  # keep-alives unlogged; pauses and resumes are always logged
    kop.peering.mandatory = not settings.standalone
    kop.peering.clusterwide = settings.all_namespaces
    kop.networking.error_backoffs = (1, 2, 5, 10)
    return kop


def run_controller(settings: ControllerSettings) -> int:
    """Run until interrupted (SIGINT/SIGTERM); returns the exit code."""
    configure_logging()
    # kopf logs its peering decisions ("Pausing operations in favour of ...", "Resuming operations ...") at
    # INFO; the gate follows them for what runs outside kopf's watches (the queue, the job watches)
    peering = PeeringGate()
    peering.install()
    metrics = Metrics()
    # one pooled connection per reconcile thread, and a few for the scaler's and the resync's own reads
    api = api_client(
        settings.kubeconfig, settings.context, on_request=metrics.requested, connections=settings.workers + 4
    )
    cache = WatchCache()
    objects = ObjectStore(api)
    # one per controller: its per-job locks serialise scaling
    quota = QuotaGate(WorkloadStore(api), settings.kueue) if settings.kueue is not None else None
    scaler = JobScaler(api, settings.render, field_manager=FIELD_MANAGER_CONTROLLER, quota=quota)
    kinds: tuple[str, ...] = BASE_KINDS
    queueing = None
    if settings.kueue is not None:
        kinds = (*BASE_KINDS, "Workload")
        queueing = Queueing(
            settings.kueue,
            WorkloadStore(api),
            metrics,
            utc_now,
            lambda ns, n: cache.get("Workload", ns, n),
            lambda ns, job: cache.of_job("Workload", ns, job),
        )
    # Events are sent by a thread of their own, so a pass does not wait for them (dihera/kube/events.py)
    events = EventRecorder(api, on_posted=lambda: metrics.wrote("create", "Event"))
    queue: ReconcileQueue | None = None

    def request(namespace: str, name: str) -> None:
        assert queue is not None  # the job watches start with a reconcile, once the queue exists
        queue.request(namespace, name)

    def request_paced(namespace: str, name: str, window: float) -> None:
        assert queue is not None
        queue.request_paced(namespace, name, window)

    # the job watches hold a connection each for as long as they watch: a client of their own, so the
    # reconcile threads' pooled connections stay theirs. A pod's event (a progress report) waits for the
    # others of its batch; a Workflow's is paced by the cost of the job's last pass; a ConfigMap's (a
    # scaler's commit) queues the job at once
    watch_api = api_client(settings.kubeconfig, settings.context, on_request=metrics.requested)
    watched = (
        Watched("Pod", settings.pod_batch_seconds),
        Watched("Workflow", 0.0, own_writes=True),
        Watched("ConfigMap", None, own_writes=True),
    )
    watches = JobWatches(watch_api, cache, request, request_paced, watched, settings.all_namespaces, peering.active)
    reconciler = Reconciler(
        JobStore(api),
        objects,
        events,
        settings.render,
        metrics,
        scaler,
        cache=cache,
        queueing=queueing,
        job_objects_ready=watches.ready,
        progress_batch=settings.progress_batch_seconds,
    )
    queue = ReconcileQueue(reconciler.reconcile, settings.retry_delays, settings.workers, active=peering.active)
    # kopf lists its kinds again after 410 Gone; the job watches replace what they held themselves
    resync = Resync(cache, objects, settings.all_namespaces, settings.resync_seconds, queue.request, kinds)
    readiness = Readiness()
    runners: list[Any] = []
    identity = settings.identity or f"{socket.gethostname()}/{os.getpid()}"  # names this replica in the peering

    async def startup(**_: Any) -> None:
        if settings.metrics_port:
            runners.append(await start_endpoints(settings.bind_address, settings.metrics_port, metrics, readiness))
        readiness.set()
        events.start()
        resync.start()
        where = "all namespaces" if settings.all_namespaces else ", ".join(settings.namespaces)
        peering = (
            "standalone"
            if settings.standalone
            else f"peering {settings.peering} as {identity} priority {settings.priority}"
            f" lifetime {settings.peering_lifetime}s"
        )
        log.info(
            "controller started: %s; %s; metrics on %s:%s", where, peering, settings.bind_address, settings.metrics_port
        )

    async def cleanup(**_: Any) -> None:
        readiness.clear()
        resync.stop()
        queue.close()
        await asyncio.to_thread(watches.close)
        await asyncio.to_thread(events.close)  # what the last passes posted (up to 10 s, off the event loop)
        for runner in runners:
            await runner.cleanup()

    def login(**_: Any) -> Any:
        return kopf_connection(api)

    registry = build_registry(queue, cache, login, startup, cleanup, kinds, watches.release_if_idle)
    liveness = f"http://{settings.bind_address}:{settings.health_port}/healthz" if settings.health_port else None
    kopf.run(
        registry=registry,
        settings=kopf_settings(settings),
        standalone=settings.standalone,
        priority=settings.priority,
        peering_name=None if settings.standalone else settings.peering,
        identity=identity,  # type: ignore[arg-type]  # kopf's Identity is a NewType of str, not exported
        liveness_endpoint=liveness,
        clusterwide=settings.all_namespaces,
        namespaces=settings.namespaces,
    )
    return 0
