"""Assemble and run the controller: one settings object in, an exit code out.

:class:`Controller` wires the pieces: the watch layer (:mod:`dihera.kube.watch`) feeds the store and
calls :class:`~dihera.controller.triggers.Triggers`, which queue jobs on the
:class:`~dihera.controller.workqueue.WorkQueue`, whose threads run
:meth:`~dihera.controller.reconcile.Reconciler.reconcile`. :func:`run_controller` serves the endpoints,
campaigns for the Lease (:mod:`dihera.kube.lease`; ``--standalone``: none) and starts the controller once
this replica leads. A replica that loses the Lease stops and exits 1, as Kubernetes controllers do: the
kubelet restarts it as a standby, with nothing left of the old run.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
from collections.abc import Callable

from dihera.constants import FIELD_MANAGER_CONTROLLER, LABEL_MANAGED_BY
from dihera.controller.apply import Applier
from dihera.controller.autoscaler import Autoscaler
from dihera.controller.endpoints import Endpoints, Readiness
from dihera.controller.kueue import Queueing
from dihera.controller.metrics import Metrics
from dihera.controller.reconcile import Reconciler, utc_now
from dihera.controller.settings import ControllerSettings
from dihera.controller.shrink import Shrinker, all_workloads
from dihera.controller.triggers import Triggers
from dihera.controller.workqueue import WorkQueue
from dihera.kube import api_client
from dihera.kube.events import EventRecorder
from dihera.kube.jobs import JobStore
from dihera.kube.lease import LeaderElector
from dihera.kube.objects import ObjectStore
from dihera.kube.queues import QueueStore
from dihera.kube.scale_executor import JobScaler
from dihera.kube.watch import Scopes, Store, Watches
from dihera.kube.workloads import QuotaGate, WorkloadStore
from dihera.logs import configure_logging

__all__ = ["Controller", "run_controller"]

log = logging.getLogger("dihera.controller")
#: The kinds watched in every scope from the start; the jobs' own objects are watched on demand.
ALWAYS = ("DIJob",)
ON_DEMAND = ("Pod", "Workflow", "ConfigMap", "Service")


class Controller:
    """Everything one leading replica runs; built idle, :meth:`start` starts it, :meth:`stop` stops it."""

    def __init__(self, settings: ControllerSettings, metrics: Metrics) -> None:
        # one pooled connection per reconcile thread, and a few for the scaler's own reads
        api = api_client(
            settings.kubeconfig, settings.context, on_request=metrics.requested, connections=settings.workers + 4
        )
        self.store = Store()
        quota = QuotaGate(WorkloadStore(api), settings.kueue) if settings.kueue is not None else None
        scaler = JobScaler(api, settings.render, field_manager=FIELD_MANAGER_CONTROLLER, quota=quota)
        # Events are sent by a thread of their own, so a pass does not wait for them (dihera/kube/events.py)
        self.events = EventRecorder(api, on_posted=lambda: metrics.wrote("create", "Event"))
        # the watches hold a connection each for as long as they watch: a client of their own
        watch_api = api_client(settings.kubeconfig, settings.context, on_request=metrics.requested)
        always = (*ALWAYS, "Workload") if settings.kueue is not None else ALWAYS
        scopes = Scopes(() if settings.all_namespaces else settings.namespaces)
        self.watches = Watches(watch_api, self.store, scopes, always, ON_DEMAND)
        applier = Applier(
            JobStore(api), ObjectStore(api), self.events, scaler, metrics, settings.render, cache=self.store
        )
        self.reconciler = Reconciler(
            applier,
            metrics,
            cache=self.store,
            queueing=self._queueing(settings, WorkloadStore(api), QueueStore(api), metrics, scaler),
            job_objects_ready=self.watches.ready,
            progress_batch=settings.progress_batch_seconds,
            autoscaler=Autoscaler(scaler),
        )
        self.queue = WorkQueue(self.reconciler.reconcile, settings.retry_delays, settings.workers)
        self.triggers = Triggers(self.store, self.queue, settings.pod_batch_seconds, self.watches.release_if_idle)
        self.watches.bind(self.triggers.on_event, self.triggers.on_listed, self.triggers.on_ready)

    def _queueing(
        self,
        settings: ControllerSettings,
        workloads: WorkloadStore,
        queues: QueueStore,
        metrics: Metrics,
        scaler: JobScaler,
    ) -> Queueing | None:
        if settings.kueue is None:
            return None
        store = self.store
        shrinker = Shrinker(
            queues,
            all_workloads(store.namespaces, lambda ns: store.labelled("Workload", ns, LABEL_MANAGED_BY, "dihera")),
            lambda ns, n: store.get("DIJob", ns, n),
            scaler,
            self.events.post,
        )
        return Queueing(
            settings.kueue,
            workloads,
            metrics,
            utc_now,
            lambda ns, n: store.get("Workload", ns, n),
            lambda ns, job: store.of_job("Workload", ns, job),
            shrinker,
        )

    def healthy(self) -> bool:
        """Its watches run (an informer whose thread died would leave jobs unseen)."""
        return self.watches.alive()

    def start(self) -> None:
        self.events.start()
        self.watches.start()
        log.info("watching %s", ", ".join(self.watches.scopes()) or "the namespaces that match")

    def stop(self) -> None:
        self.queue.close()
        self.watches.close()
        self.events.close()  # what the last passes posted (up to 10 s)


def _identity(settings: ControllerSettings) -> str:
    return settings.identity or f"{socket.gethostname()}_{os.getpid()}"


def _on_signals(stop: threading.Event) -> None:
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())


def _elector(settings: ControllerSettings, controller: Controller, on_lost: Callable[[], None]) -> LeaderElector | None:
    """The replica's campaign for the Lease (None: standalone), not started; leading starts ``controller``."""
    election = settings.leader_election
    if election is None:
        return None
    return LeaderElector(
        api_client(settings.kubeconfig, settings.context),
        election.namespace,
        election.name,
        _identity(settings),
        on_started=controller.start,
        on_stopped=on_lost,
        lease_seconds=election.lease_seconds,
        renew_seconds=election.renew_seconds,
        retry_seconds=election.retry_seconds,
    )


def run_controller(settings: ControllerSettings) -> int:
    """Run until SIGTERM/SIGINT (exit 0) or until this replica loses the Lease (exit 1)."""
    configure_logging()
    stop, lost = threading.Event(), threading.Event()
    _on_signals(stop)
    metrics = Metrics()
    controller = Controller(settings, metrics)
    readiness = Readiness()

    def lost_lease() -> None:
        lost.set()
        stop.set()

    elector = _elector(settings, controller, lost_lease)

    def healthy() -> bool:
        return controller.healthy() and (elector is None or elector.alive)

    endpoints = Endpoints(
        settings.bind_address, settings.metrics_port, settings.health_port, metrics, readiness, healthy
    )
    endpoints.start()
    if elector is None:
        controller.start()
    else:
        elector.start()
    readiness.set()
    where = "all namespaces" if settings.all_namespaces else ", ".join(settings.namespaces)
    election = settings.leader_election
    how = "standalone" if election is None else f"Lease {election.namespace}/{election.name} as {_identity(settings)}"
    log.info("controller started: %s; %s; metrics on %s", where, how, endpoints.ports or "no port")
    while not stop.wait(1.0):
        pass
    readiness.clear()
    controller.stop()
    if elector is not None:
        elector.release()
    endpoints.stop()
    return 1 if lost.is_set() else 0
