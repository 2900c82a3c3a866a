"""The replicas' latest RL reports merged into ``status.training`` (pure: no clock, no I/O).

The di-server keeps each replica's newest report (:class:`Report`) and, at most once a second per job,
folds them with the status written before (which carries what must survive a di-server restart: the best
return, the evaluation count, the curve) into a new :class:`~dihera.shapes.training.TrainingStatus`:

- the learner's figures from the learner that is furthest along (the newest iteration);
- env steps and env steps/s summed over the collectors, each collector's newest report counted once;
- policy lag per collector: the learner's iteration minus the model iteration the collector acts with
  (p50 and max over the collectors);
- replay ratio: samples consumed per env step collected (``samplesPerSecond / envStepsPerSecond``);
- each evaluation received since the last write: the newest and the best return, and a curve point;
- a report older than :data:`STALE_SECONDS` (a collector removed, a replica gone) no longer counts;
- a figure reported as NaN or infinite is named in ``nonFinite`` and never written as a number (the
  API server's JSON has no NaN, and a policy must see the fault, not a number that hides it).

The curve holds at most :data:`MAX_CURVE` points: one per write where the learner moved on (with the env
steps/s then) and one per evaluation (with its return); past the bound the older half is thinned.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from dihera.shapes.training import CurvePoint, Evaluation, PolicyLag, ReportedAt, TrainingStatus

__all__ = [
    "FIGURES",
    "MAX_CURVE",
    "ROLES",
    "STALE_SECONDS",
    "Report",
    "merge_training",
]

#: Points of ``status.training.curve`` (about 15 KiB as JSON at most).
MAX_CURVE: Final = 200
#: A replica's report counts this long after it arrived (a reporter sends every few seconds).
STALE_SECONDS: Final = 60.0
#: Who reports.
ROLES: Final = ("learner", "collector", "evaluator")
#: The figures each role may report (anything else in a report is refused by the route).
FIGURES: Final[Mapping[str, tuple[str, ...]]] = {
    "learner": ("iteration", "iterationsPerSecond", "samplesPerSecond", "dataWaitFraction", "loss"),
    "collector": ("envSteps", "envStepsPerSecond", "modelIteration"),
    "evaluator": ("iteration", "return"),
}


@dataclass(frozen=True)
class Report:
    """One replica's newest figures. ``at``: when the di-server received it (seconds, its own clock), and
    ``time`` the same instant as RFC 3339 (written in ``reportedAt``)."""

    role: str
    replica: str
    figures: Mapping[str, float] = field(default_factory=dict)
    at: float = 0.0
    time: str = ""


def _finite(report: Report | None, name: str) -> float | None:
    value = report.figures.get(name) if report is not None else None
    return float(value) if value is not None and math.isfinite(value) else None


def _non_finite(reports: Iterable[Report]) -> list[str]:
    return sorted({name for r in reports for name, value in r.figures.items() if not math.isfinite(value)})


def _learner(reports: Sequence[Report]) -> Report | None:
    learners = [r for r in reports if r.role == "learner"]
    return max(learners, key=lambda r: (_finite(r, "iteration") or 0.0, r.at), default=None)


def _learner_figures(learner: Report | None) -> TrainingStatus:
    out: TrainingStatus = {}
    if (iteration := _finite(learner, "iteration")) is not None:
        out["iteration"] = max(0, int(iteration))
    for name in ("iterationsPerSecond", "samplesPerSecond"):
        if (value := _finite(learner, name)) is not None:
            out[name] = max(0.0, value)
    if (wait := _finite(learner, "dataWaitFraction")) is not None:
        out["dataWaitFraction"] = min(1.0, max(0.0, wait))
    return out


def _collector_figures(collectors: Sequence[Report], iteration: int | None) -> TrainingStatus:
    out: TrainingStatus = {}
    steps = [v for r in collectors if (v := _finite(r, "envSteps")) is not None]
    rates = [v for r in collectors if (v := _finite(r, "envStepsPerSecond")) is not None]
    if steps:
        out["envSteps"] = int(sum(max(0.0, s) for s in steps))
    if rates:
        out["envStepsPerSecond"] = sum(max(0.0, r) for r in rates)
    models = [v for r in collectors if (v := _finite(r, "modelIteration")) is not None]
    if iteration is not None and models:
        lags = [max(0, iteration - int(m)) for m in models]
        out["policyLag"] = PolicyLag(p50=float(statistics.median(lags)), max=max(lags))
    return out


def _evaluation(before: Evaluation, new: Sequence[Report]) -> Evaluation:
    out = Evaluation(**before)
    for report in new:
        value, iteration = _finite(report, "return"), _finite(report, "iteration")
        if value is None:
            continue
        out["value"] = value
        out["iteration"] = max(0, int(iteration or 0))
        out["count"] = out.get("count", 0) + 1
        if "best" not in out or value > out["best"]:
            out["best"], out["bestIteration"] = value, out["iteration"]
    return out


def _thin(curve: list[CurvePoint]) -> list[CurvePoint]:
    """At most :data:`MAX_CURVE` points: every other point of the older half dropped until it fits (the
    newest points keep their resolution; the first point stays)."""
    while len(curve) > MAX_CURVE:
        half = len(curve) // 2
        curve = curve[:half:2] + curve[half:]
    return curve


def _curve(before: Sequence[CurvePoint], status: TrainingStatus, evaluations: Sequence[Report]) -> list[CurvePoint]:
    curve = [CurvePoint(**p) for p in before]
    last = curve[-1].get("iteration", -1) if curve else -1
    rate = status.get("envStepsPerSecond")
    for report in evaluations:
        value = _finite(report, "return")
        if value is not None:
            point = CurvePoint(iteration=max(0, int(_finite(report, "iteration") or 0)), value=value)
            if rate is not None:
                point["envStepsPerSecond"] = rate
            curve.append(point)
    iteration = status.get("iteration")
    if iteration is not None and iteration > last and not evaluations and rate is not None:
        curve.append(CurvePoint(iteration=iteration, envStepsPerSecond=rate))
    return _thin(curve)


def _reported_at(reports: Sequence[Report], before: ReportedAt) -> ReportedAt:
    out = ReportedAt(**before)
    for role in ROLES:
        newest = max((r for r in reports if r.role == role), key=lambda r: r.at, default=None)
        if newest is not None and newest.time:
            out[role] = newest.time
    return out


def merge_training(
    before: TrainingStatus | None,
    latest: Iterable[Report],
    evaluations: Sequence[Report],
    now: float,
) -> TrainingStatus:
    """``status.training`` from ``before`` (the status written last, or None), each replica's newest report
    in ``latest`` and the evaluator reports received since the last write, in order (``evaluations``), at
    ``now`` (the di-server's clock, as the reports' ``at``)."""
    before = before or {}
    fresh = [r for r in latest if now - r.at <= STALE_SECONDS]
    status = _learner_figures(_learner(fresh))
    if "iteration" not in status and "iteration" in before:
        status["iteration"] = before["iteration"]
    status.update(_collector_figures([r for r in fresh if r.role == "collector"], status.get("iteration")))
    samples, rate = status.get("samplesPerSecond"), status.get("envStepsPerSecond")
    if samples is not None and rate:
        status["replayRatio"] = samples / rate
    evaluation = _evaluation(before.get("evaluation", {}), evaluations)
    if evaluation:
        status["evaluation"] = evaluation
    if bad := _non_finite(fresh):
        status["nonFinite"] = bad
    if curve := _curve(before.get("curve", []), status, evaluations):
        status["curve"] = curve
    if reported := _reported_at(fresh, before.get("reportedAt", {})):
        status["reportedAt"] = reported
    return status
