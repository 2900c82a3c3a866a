"""Prometheus metrics of the controller, in a registry of its own (no global state)."""

from __future__ import annotations

import threading

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from dihera.constants import Phase

__all__ = ["PHASES", "Metrics"]

PHASES = tuple(p.value for p in Phase)


class Metrics:
    """``dihera_jobs{phase}``, ``dihera_reconcile_duration_seconds``, ``dihera_job_restarts_total``,
    ``dihera_reconcile_errors_total``, ``dihera_api_writes_total{verb,kind}``, ``dihera_api_requests_total{verb,kind}``
    (every request, reads too), ``dihera_live_confirmations_total``, ``dihera_cache_behind_total``."""

    def __init__(self) -> None:
        # lizard forgives: a table of the metrics' declarations
        self.registry = CollectorRegistry()
        self.jobs = Gauge("dihera_jobs", "DIJobs seen by this controller, by phase", ["phase"], registry=self.registry)
        self.reconcile_seconds = Histogram(
            "dihera_reconcile_duration_seconds",
            "Time of one reconcile of a DIJob (observe, compute, apply)",
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
            registry=self.registry,
        )
        self.restarts = Counter(
            "dihera_job_restarts", "Replica restarts observed (retry attempts beyond the first)", registry=self.registry
        )
        self.errors = Counter(
            "dihera_reconcile_errors", "Reconciles that failed (retried with backoff)", registry=self.registry
        )
        self.status_conflicts = Counter(
            "dihera_status_conflicts",
            "Status writes refused because the DIJob changed since it was read (re-read and recomputed)",
            registry=self.registry,
        )
        self.requests = Counter(
            "dihera_api_requests",
            "Kubernetes API requests sent by the controller (its watches' lists and watches too; not its Lease's)",
            ["verb", "kind"],
            registry=self.registry,
        )
        self.live_confirmations = Counter(
            "dihera_live_confirmations",
            "Passes read again from the API server because the watch cache decided a terminal phase",
            registry=self.registry,
        )
        self.cache_behind = Counter(
            "dihera_cache_behind",
            "Passes that wrote nothing because the watch cache had not delivered what the status records",
            registry=self.registry,
        )
        self.progress_deferred = Counter(
            "dihera_progress_writes_deferred",
            "Status writes that only reported progress, left to a pass at most --progress-batch-seconds later",
            registry=self.registry,
        )
        self.writes = Counter(
            "dihera_api_writes",
            "Kubernetes API writes made by the controller",
            ["verb", "kind"],
            registry=self.registry,
        )
        self._phases: dict[str, str] = {}
        self._lock = threading.Lock()
        for phase in PHASES:
            self.jobs.labels(phase=phase).set(0)

    def job_phase(self, key: str, phase: str | None) -> None:
        """Record a job's phase (None: the job is gone) and refresh the per-phase gauge."""
        with self._lock:
            if phase is None:
                self._phases.pop(key, None)
            else:
                self._phases[key] = phase
            counts = dict.fromkeys(PHASES, 0)
            for p in self._phases.values():
                counts[p] = counts.get(p, 0) + 1
        for p, n in counts.items():
            self.jobs.labels(phase=p).set(n)

    def requested(self, verb: str, kind: str) -> None:
        """One API request (the API client's hook, :func:`dihera.kube.config.api_client`)."""
        self.requests.labels(verb=verb, kind=kind).inc()

    def wrote(self, verb: str, kind: str, n: int = 1) -> None:
        if n:
            self.writes.labels(verb=verb, kind=kind).inc(n)
