"""``spec.trainingPolicy``'s verdicts (pure): whether the job's RL figures (``status.training``) end it.

DI-engine stops training when the evaluator's return reaches ``stop_value``; many programs (a stock ``ditask``
main without an evaluator's stop, a long sweep trial) never stop themselves. The policy ends the job from the
figures the replicas report, in this order (the first that answers wins):

1. ``failOnNonFinite`` (default true): a figure reported NaN or infinite (``status.training.nonFinite``: loss,
   return...) → Failed, reason ``NonFiniteMetric``: a diverged run only burns its quota from then on;
2. ``target``: ``metric`` >= ``value`` → Succeeded, reason ``TrainingTargetReached`` (DI-engine's ``stop_value``
   rule, for ``evaluationReturn``: the newest evaluation's mean return);
3. ``plateau``: the best evaluation return has not improved by more than ``minDelta`` over the last
   ``evaluations`` evaluations → Succeeded, reason ``TrainingPlateaued``. The evaluations are the points of
   ``status.training.curve`` that carry a return; a best older than the curve's first such point (the curve is
   bounded) counts as before all of them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from dihera.constants import EventReason
from dihera.model import Plateau, TrainingPolicy, TrainingTarget
from dihera.shapes.training import CurvePoint, TrainingStatus

__all__ = ["TrainingVerdict", "evaluations_without_improvement", "judge_training", "metric_value"]


@dataclass(frozen=True)
class TrainingVerdict:
    """The job ends: Succeeded (``succeeded``) or Failed, for ``reason`` (an :class:`EventReason`), as ``message``."""

    succeeded: bool
    reason: EventReason
    message: str


def _number(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def metric_value(training: TrainingStatus, metric: str) -> float | None:
    """The figure ``trainingPolicy.target.metric`` names, or None while it was not reported."""
    evaluation = training.get("evaluation") or {}
    found: object = {
        "evaluationReturn": evaluation.get("value"),
        "bestEvaluationReturn": evaluation.get("best"),
        "iteration": training.get("iteration"),
        "envSteps": training.get("envSteps"),
    }.get(metric)
    return _number(found)


def _non_finite(training: TrainingStatus) -> list[str]:
    """The figures reported NaN or infinite: ``nonFinite``, and any number of the status that is not finite."""
    named = [str(n) for n in training.get("nonFinite") or []]
    evaluation = training.get("evaluation") or {}
    numbers = {f"evaluation.{k}": v for k, v in evaluation.items()} | {k: v for k, v in training.items()}
    named += [k for k, v in numbers.items() if (n := _number(v)) is not None and not math.isfinite(n)]
    return list(dict.fromkeys(named))


def _target(target: TrainingTarget, training: TrainingStatus) -> TrainingVerdict | None:
    value = metric_value(training, target.metric)
    if value is None or value < target.value:
        return None
    evaluation = training.get("evaluation") or {}
    at = {"evaluationReturn": evaluation.get("iteration"), "bestEvaluationReturn": evaluation.get("bestIteration")}.get(
        target.metric, training.get("iteration")
    )
    where = f" at iteration {at}" if at is not None else ""
    return TrainingVerdict(
        True,
        EventReason.TRAINING_TARGET_REACHED,
        f"trainingPolicy.target: {target.metric} {value:g}{where} reached {target.value:g}",
    )


def evaluations_without_improvement(curve: Sequence[CurvePoint], best: float | None, best_iteration: int | None,
                                    min_delta: float) -> int:  # fmt: skip
    """How many of the curve's evaluations (its points with a return) came after the last one that improved the
    best by more than ``min_delta``; ``best``/``best_iteration``: the best of all evaluations, which may be older
    than the bounded curve."""
    points = [(p.get("iteration"), v) for p in curve if (v := _number(p.get("value"))) is not None]
    if not points:
        return 0
    first = points[0][0]
    older = best is not None and best_iteration is not None and first is not None and best_iteration < first
    running, since = (best, 0) if older else (None, 0)
    for _, value in points:
        if running is None or value > running + min_delta:
            running, since = value, 0
        else:
            since += 1
    return since


def _plateau(plateau: Plateau, training: TrainingStatus) -> TrainingVerdict | None:
    evaluation = training.get("evaluation") or {}
    best, best_iteration = _number(evaluation.get("best")), evaluation.get("bestIteration")
    since = evaluations_without_improvement(training.get("curve") or [], best, best_iteration, plateau.min_delta)
    if since < plateau.evaluations:
        return None
    at = f" (iteration {best_iteration})" if best_iteration is not None else ""
    best_said = f"{best:g}{at}" if best is not None else "return"
    return TrainingVerdict(
        True,
        EventReason.TRAINING_PLATEAUED,
        f"trainingPolicy.plateau: the best evaluation return {best_said} has not improved by more than "
        f"{plateau.min_delta:g} over the last {since} evaluations (evaluations: {plateau.evaluations})",
    )


def judge_training(policy: TrainingPolicy, training: TrainingStatus) -> TrainingVerdict | None:
    """Whether ``training`` ends the job under ``policy`` (the module docstring's order); None: it goes on."""
    if policy.fail_on_non_finite and (bad := _non_finite(training)):
        return TrainingVerdict(
            False,
            EventReason.NON_FINITE_METRIC,
            f"a replica reported {', '.join(bad)} as NaN or infinite (trainingPolicy.failOnNonFinite); "
            "the run diverged: lower the learning rate or clip gradients, then start it again from its last "
            "checkpoint",
        )
    if policy.target is not None and (verdict := _target(policy.target, training)) is not None:
        return verdict
    if policy.plateau is not None:
        return _plateau(policy.plateau, training)
    return None
