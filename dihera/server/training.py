"""The replicas' RL reports, kept per job and written to ``status.training`` at most once a second per job.

A report (``POST /v2alpha1/job/{ns}.{name}/training``) is small and frequent (every replica, every few
seconds), so it is not written on arrival: each replica's newest report is kept here, and a job with new
reports is written by one background thread once :data:`WRITE_INTERVAL` has passed since its last write
(20 reports in a second: one write). The write is the merge of :func:`dihera.rl.merge.merge_training` over
the status written before (read from the watch cache: a di-server restart keeps the best return and the
curve), applied only to the DIJob the reports were checked against (its uid).

Memory: only a report that passed the token, the right and the pod checks is kept, only for a DIJob the
cache holds, at most :data:`MAX_REPLICAS` replicas' reports (one per replica and role) and
:data:`MAX_EVALUATIONS` evaluations waiting per job; a job deleted (or created again under its name) is
forgotten at its next write; a replica silent for :data:`~dihera.rl.merge.STALE_SECONDS` is dropped. With
several di-server replicas each keeps and writes the reports it received (docs/training-figures.md).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Final

from dihera.kube.snapshot import JobSnapshot
from dihera.rl.merge import STALE_SECONDS, Report, merge_training
from dihera.shapes.training import TrainingStatus

__all__ = [
    "MAX_EVALUATIONS",
    "MAX_REPLICAS",
    "WRITE_INTERVAL",
    "TooManyReplicas",
    "TrainingReports",
    "training_of",
]

log = logging.getLogger("dihera.server.training")

#: Replicas of one job whose newest report is kept (a DIJob of 500 collectors fits).
MAX_REPLICAS: Final = 512
#: Evaluations of one job waiting for the next write (the oldest dropped past it).
MAX_EVALUATIONS: Final = 32
#: Seconds between two writes of one job's ``status.training``.
WRITE_INTERVAL: Final = 1.0

#: ``(namespace, name)`` → the DIJob's uid and its ``status.training`` as cached, or None when it is gone.
Cached = Callable[[str, str], "tuple[str, TrainingStatus | None] | None"]
#: Write ``status.training`` of the DIJob with that uid; False when the DIJob is gone or is another one.
Write = Callable[[str, str, str, TrainingStatus], bool]


class TooManyReplicas(Exception):
    """A new replica's report refused: the job already has :data:`MAX_REPLICAS` replicas reporting."""


@dataclass
class _Job:
    uid: str
    #: each (replica, role)'s newest report: one process may hold several roles (DI-engine's serial pipeline, a
    #: stock main run in one process, ``--parallel-workers``), each reporting its own figures
    latest: dict[tuple[str, str], Report] = field(default_factory=dict)
    evaluations: list[Report] = field(default_factory=list)
    dirty: bool = False
    written: float = float("-inf")  # monotonic


def _rfc3339(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


class TrainingReports:
    """Each job's newest reports and its write schedule. ``background``: a daemon thread writes (started
    with the first report); without it, :meth:`flush` is called by the owner (tests)."""

    def __init__(
        self,
        cached: Cached,
        write: Write,
        interval: float = WRITE_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        background: bool = True,
    ) -> None:
        self._cached, self._write, self._interval = cached, write, interval
        self._clock, self._wall, self._background = clock, wall, background
        self._jobs: dict[tuple[str, str], _Job] = {}
        self._lock = threading.Condition()
        self._thread: threading.Thread | None = None
        self.writes = 0

    def add(self, namespace: str, name: str, uid: str, role: str, replica: str, figures: Mapping[str, float]) -> None:
        """Keep ``replica``'s newest report of ``role`` for the DIJob ``uid``; :class:`TooManyReplicas` past the
        bound."""
        now = self._wall()
        report = Report(role, replica, dict(figures), now, _rfc3339(now))
        with self._lock:
            job = self._jobs.get((namespace, name))
            if job is None or job.uid != uid:
                job = self._jobs[(namespace, name)] = _Job(uid)
            if (replica, role) not in job.latest and len(job.latest) >= MAX_REPLICAS:
                self._prune(job, now)
                if len(job.latest) >= MAX_REPLICAS:
                    raise TooManyReplicas(
                        f"{len(job.latest)} replicas of this job report already ({MAX_REPLICAS} at most)"
                    )
            job.latest[(replica, role)] = report
            if role == "evaluator":
                job.evaluations = [*job.evaluations, report][-MAX_EVALUATIONS:]
            job.dirty = True
            self._lock.notify()
        if self._background and self._thread is None:
            self._start()

    def jobs(self) -> int:
        """Jobs whose reports are kept (a gauge for tests and metrics)."""
        with self._lock:
            return len(self._jobs)

    @staticmethod
    def _prune(job: _Job, now: float) -> None:
        job.latest = {k: r for k, r in job.latest.items() if now - r.at <= STALE_SECONDS}

    def _due(self) -> tuple[list[tuple[tuple[str, str], _Job]], float]:
        """The jobs to write now, taken (their evaluations moved out), and the seconds until the next is due."""
        now, due, wait = self._clock(), [], self._interval
        for key, job in self._jobs.items():
            if not job.dirty:
                continue
            left = job.written + self._interval - now
            if left > 0:
                wait = min(wait, left)
                continue
            taken = _Job(job.uid, dict(job.latest), job.evaluations)
            job.evaluations, job.dirty, job.written = [], False, now
            due.append((key, taken))
        return due, wait

    def flush(self) -> float:
        """Write every job that is due; the seconds until the next one is (at most the interval)."""
        with self._lock:
            due, wait = self._due()
        for (namespace, name), job in due:
            self._flush_one(namespace, name, job)
        return wait

    def _flush_one(self, namespace: str, name: str, job: _Job) -> None:
        cached = self._cached(namespace, name)
        if cached is None or cached[0] != job.uid:
            self._forget(namespace, name, job.uid)
            return
        training = merge_training(cached[1], job.latest.values(), job.evaluations, self._wall())
        try:
            written = self._write(namespace, name, job.uid, training)
        except Exception:  # the API server refused or is away: the next report schedules a write again
            log.warning("status.training of DIJob %s/%s not written", namespace, name, exc_info=True)
            self._requeue(namespace, name, job)
            return
        self.writes += 1
        if not written:
            self._forget(namespace, name, job.uid)

    def _requeue(self, namespace: str, name: str, job: _Job) -> None:
        with self._lock:
            kept = self._jobs.get((namespace, name))
            if kept is not None and kept.uid == job.uid:
                kept.evaluations = [*job.evaluations, *kept.evaluations][-MAX_EVALUATIONS:]
                kept.dirty = True

    def _forget(self, namespace: str, name: str, uid: str) -> None:
        with self._lock:
            kept = self._jobs.get((namespace, name))
            if kept is not None and kept.uid == uid:
                del self._jobs[(namespace, name)]

    def _start(self) -> None:
        with self._lock:
            if self._thread is not None:
                return
            self._thread = threading.Thread(target=self._run, name="dihera-training", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            wait = self.flush()
            with self._lock:
                if not any(job.dirty for job in self._jobs.values()):
                    self._lock.wait()
                    continue
            time.sleep(max(0.01, wait))


def training_of(job: JobSnapshot | None) -> tuple[str, TrainingStatus | None] | None:
    """The uid and ``status.training`` of a cached DIJob (None: not cached)."""
    if job is None:
        return None
    training = (job.body.get("status") or {}).get("training")
    return str(job.body["metadata"].get("uid") or ""), training
