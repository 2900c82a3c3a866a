"""Collector autoscaling in the controller: the short series of each job's ``status.training``, the decision,
and the change through the scale path.

Every pass of a Running job with an autoscaled collector task records the job's ``status.training`` (a new
sample when the learner's ``reportedAt`` moved: the di-server's status write queues the pass), asks
:func:`dihera.rl.autoscale.decide_collectors` and, for a change, calls the controller's scaler with
``ScaleRequest.set_replicas``: the same path as ``dihera scale`` and the di-server's scale API (ranks above
every live replica, the membership, Kueue's quota gate, spec.replicas written). The decision goes into the
pass's status write (:func:`dihera.controller.decide.autoscaling.with_autoscaling`: a condition, an Event).

The series is kept in memory, per job, for the longest stabilization window and the longest rate-policy
period (and at most :data:`MAX_SAMPLES`): a controller that restarts, or a new leader, starts a series anew,
which only delays the next change by one window (never causes one).
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from dihera.constants import AutoscaleReason, Phase
from dihera.controller.apply import Scaler
from dihera.controller.decide.view import JobView
from dihera.errors import ScaleError
from dihera.model import Autoscaling, Task
from dihera.rl.autoscale import AutoscaleDecision, Sample, ScaleChange, collector_bounds, decide_collectors
from dihera.scaling import ScaleRequest
from dihera.shapes.training import TrainingStatus

__all__ = ["MAX_SAMPLES", "Autoscaler", "reported_at"]

log = logging.getLogger("dihera.controller")
#: Samples kept per job at most (a report a second over a 10-minute window).
MAX_SAMPLES = 600


def reported_at(training: TrainingStatus) -> float | None:
    """When the learner reported ``training`` (``reportedAt.learner``, RFC 3339) in seconds since the epoch."""
    stamp = (training.get("reportedAt") or {}).get("learner")
    if not stamp:
        return None
    try:
        return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


@dataclass
class _Series:
    samples: deque[Sample] = field(default_factory=lambda: deque(maxlen=MAX_SAMPLES))
    changes: deque[ScaleChange] = field(default_factory=lambda: deque(maxlen=64))


def _keep_seconds(spec: Autoscaling) -> float:
    rules = (spec.scale_up, spec.scale_down)
    periods = [p.period_seconds for r in rules for p in r.policies]
    return max([r.stabilization_window_seconds for r in rules] + periods) + spec.stale_after_seconds


class Autoscaler:
    """Per job, the series and the changes made; :meth:`step` decides and applies. ``clock``: seconds since
    the epoch (the figures' reportedAt is wall-clock time)."""

    def __init__(self, scaler: Scaler, clock: Callable[[], float] = time.time) -> None:
        self._scaler = scaler
        self._clock = clock
        self._series: dict[str, _Series] = {}

    def forget(self, key: str) -> None:
        self._series.pop(key, None)

    def step(self, view: JobView, extra: Mapping[str, str]) -> AutoscaleDecision | None:
        """Record the job's figures, decide, and apply a change; the decision (None: the job has no autoscaled
        task or is not Running: nothing to record in its status)."""
        job = view.job
        task = next((t for t in job.tasks if t.autoscaling is not None), None) if job is not None else None
        if job is None or task is None or task.autoscaling is None or view.membership is None:
            self.forget(view.key)
            return None
        if view.phase != Phase.RUNNING:
            return None
        counts = view.membership.task_counts(t.name for t in job.tasks)
        series = self._series.setdefault(view.key, _Series())
        now = self._clock()
        self._record(series, view, counts[task.name], task.autoscaling, now)
        bounds = collector_bounds(job, task.name, counts)
        decision = decide_collectors(
            list(series.samples), task.autoscaling, counts[task.name], bounds, list(series.changes), now
        )
        return self._apply(view, task, decision, series, now, extra) if decision.changed else decision

    def _record(self, series: _Series, view: JobView, count: int, spec: Autoscaling, now: float) -> None:
        training = view.status.get("training")
        if isinstance(training, Mapping):
            figures = training
            at = reported_at(figures)
            if at is not None and (not series.samples or at > series.samples[-1].at):
                series.samples.append(Sample(at, figures, count))
        horizon = now - _keep_seconds(spec)
        while len(series.samples) > 1 and series.samples[1].at < horizon:
            series.samples.popleft()  # the first kept one may be the one that held at a window's start

    def _apply(
        self,
        view: JobView,
        task: Task,
        decision: AutoscaleDecision,
        series: _Series,
        now: float,
        extra: Mapping[str, str],
    ) -> AutoscaleDecision:
        log.info("autoscaling %s: %s", task.name, decision.message, extra=extra)
        try:
            self._scaler.scale(view.namespace, view.name, ScaleRequest.set_replicas(task.name, decision.desired))
        except ScaleError as err:
            log.warning("autoscaling %s refused: %s", task.name, err, extra=extra)
            again = " (retried with the next figures)" if err.retryable else ""
            message = f"{decision.message}; refused: {err}{again}"
            return AutoscaleDecision(
                decision.current, decision.current, AutoscaleReason.SCALE_REFUSED, message,
                decision.data_wait, decision.replay_ratio, decision.recommended, decision.samples,
            )  # fmt: skip
        series.changes.append(ScaleChange(now, decision.current, decision.desired))
        return decision
