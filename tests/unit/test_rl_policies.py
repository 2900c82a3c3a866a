"""spec.trainingPolicy's verdicts (dihera/rl/policies.py) on recorded status.training: a target reached, a
plateau (with a bounded curve), NaN and infinite figures, and the order between them."""

from __future__ import annotations

from collections.abc import Sequence

from dihera.constants import EventReason
from dihera.model import Plateau, TrainingPolicy, TrainingTarget
from dihera.rl.policies import evaluations_without_improvement, judge_training, metric_value
from dihera.shapes.training import CurvePoint, TrainingStatus

STOP = TrainingPolicy(target=TrainingTarget("evaluationReturn", 195.0))
PLATEAU = TrainingPolicy(plateau=Plateau(3, min_delta=1.0))


def curve(values: Sequence[float | None], every: int = 100) -> list[CurvePoint]:
    points: list[CurvePoint] = []
    for i, v in enumerate(values):
        p: CurvePoint = {"iteration": (i + 1) * every, "envStepsPerSecond": 500.0}
        if v is not None:
            p["value"] = v
        points.append(p)
    return points


def evaluated(value: float, best: float, best_iteration: int, iteration: int = 900) -> TrainingStatus:
    return {"iteration": iteration, "evaluation": {"value": value, "iteration": iteration, "best": best,
                                                   "bestIteration": best_iteration, "count": 9}}  # fmt: skip


def test_the_target_is_reached_at_or_above_its_value() -> None:
    assert judge_training(STOP, evaluated(194.9, 194.9, 900)) is None
    verdict = judge_training(STOP, evaluated(195.0, 195.0, 900))
    assert verdict is not None and verdict.succeeded and verdict.reason is EventReason.TRAINING_TARGET_REACHED
    assert "evaluationReturn 195 at iteration 900 reached 195" in verdict.message
    assert judge_training(STOP, {"iteration": 5}) is None  # no evaluation yet


def test_other_metrics_are_read_from_their_fields() -> None:
    t: TrainingStatus = {"iteration": 10, "envSteps": 5000, "evaluation": {"value": 1.0, "best": 3.0}}
    assert [metric_value(t, m) for m in ("evaluationReturn", "bestEvaluationReturn", "iteration", "envSteps")] == [
        1.0, 3.0, 10.0, 5000.0,
    ]  # fmt: skip
    steps = TrainingPolicy(target=TrainingTarget("envSteps", 5000))
    assert judge_training(steps, t) is not None


def test_a_plateau_counts_evaluations_since_the_best_improved_by_more_than_min_delta() -> None:
    rising = {**evaluated(150, 150, 500), "curve": curve([10, 50, 100, 120, 150])}
    assert judge_training(PLATEAU, rising) is None  # type: ignore[arg-type]
    flat = {**evaluated(150.5, 151, 600), "curve": curve([10, 50, 150, 151, 150.5, 149, None, 150.9])}
    verdict = judge_training(PLATEAU, flat)  # type: ignore[arg-type]
    assert verdict is not None and verdict.reason is EventReason.TRAINING_PLATEAUED and verdict.succeeded
    assert "over the last 4 evaluations" in verdict.message  # 151 (+1.0 only) and the three after 150


def test_a_best_older_than_the_bounded_curve_counts_as_before_all_its_points() -> None:
    assert evaluations_without_improvement(curve([100, 120, 130], every=1000)[0:3], 200, 50, 0.0) == 3
    assert evaluations_without_improvement(curve([100, 120, 130]), None, None, 0.0) == 0  # rising
    assert evaluations_without_improvement([], 200, 50, 0.0) == 0


def test_non_finite_figures_fail_first_unless_turned_off() -> None:
    diverged: TrainingStatus = {**evaluated(200.0, 200.0, 900), "nonFinite": ["loss"]}
    both = TrainingPolicy(target=TrainingTarget("evaluationReturn", 195.0))
    verdict = judge_training(both, diverged)
    assert verdict is not None and not verdict.succeeded and verdict.reason is EventReason.NON_FINITE_METRIC
    assert "loss" in verdict.message
    off = TrainingPolicy(target=TrainingTarget("evaluationReturn", 195.0), fail_on_non_finite=False)
    assert judge_training(off, diverged).reason is EventReason.TRAINING_TARGET_REACHED  # type: ignore[union-attr]
    inf: TrainingStatus = {"replayRatio": float("inf")}
    assert judge_training(TrainingPolicy(), inf).reason is EventReason.NON_FINITE_METRIC  # type: ignore[union-attr]
    assert judge_training(TrainingPolicy(), {"replayRatio": 1.0}) is None
