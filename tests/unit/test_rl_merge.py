"""The merge of the replicas' newest reports into status.training (dihera/rl/merge.py)."""

from __future__ import annotations

import json
import math

from dihera.rl.merge import MAX_CURVE, STALE_SECONDS, Report, merge_training
from dihera.shapes.training import TrainingStatus

NOW = 1000.0


def learner(at: float = NOW, **figures: float) -> Report:
    return Report("learner", "learner-0", figures, at, f"t{at:g}")


def collector(name: str, at: float = NOW, **figures: float) -> Report:
    return Report("collector", name, figures, at, f"t{at:g}")


def evaluation(iteration: int, value: float, at: float = NOW) -> Report:
    return Report("evaluator", "evaluator-0", {"iteration": iteration, "return": value}, at, f"t{at:g}")


def test_sums_over_collectors_lag_and_ratios() -> None:
    latest = [
        learner(iteration=100, iterationsPerSecond=10.0, samplesPerSecond=640.0, dataWaitFraction=0.25),
        collector("c0", envSteps=1000, envStepsPerSecond=100.0, modelIteration=98),
        collector("c1", envSteps=3000, envStepsPerSecond=220.0, modelIteration=90),
        collector("c2", envSteps=500, envStepsPerSecond=0.0, modelIteration=100),
    ]
    status = merge_training(None, latest, [], NOW)
    assert status["iteration"] == 100 and status["iterationsPerSecond"] == 10.0
    assert (status["envSteps"], status["envStepsPerSecond"]) == (4500, 320.0)
    assert status["replayRatio"] == 2.0
    assert status["dataWaitFraction"] == 0.25
    assert status["policyLag"] == {"p50": 2.0, "max": 10}
    assert status["reportedAt"] == {"learner": "t1000", "collector": "t1000"}
    assert status["curve"] == [{"iteration": 100, "envStepsPerSecond": 320.0}]
    assert "evaluation" not in status and "nonFinite" not in status


def test_a_stale_collector_no_longer_counts_and_a_lag_never_goes_negative() -> None:
    latest = [
        learner(iteration=5),
        collector("gone", at=NOW - STALE_SECONDS - 1, envSteps=9000, envStepsPerSecond=900.0, modelIteration=0),
        collector("ahead", envSteps=10, envStepsPerSecond=5.0, modelIteration=7),
    ]
    status = merge_training(None, latest, [], NOW)
    assert (status["envSteps"], status["envStepsPerSecond"]) == (10, 5.0)
    assert status["policyLag"] == {"p50": 0.0, "max": 0}


def test_evaluations_keep_the_newest_and_the_best_and_a_point_each() -> None:
    old = {"value": 50.0, "iteration": 10, "best": 80.0, "bestIteration": 5, "count": 2}
    before: TrainingStatus = {"evaluation": old}  # type: ignore[typeddict-item]
    evals = [evaluation(20, 70.0), evaluation(30, 120.0)]
    status = merge_training(before, [learner(iteration=30), *evals], evals, NOW)
    assert status["evaluation"] == {"value": 120.0, "iteration": 30, "best": 120.0, "bestIteration": 30, "count": 4}
    assert [p.get("value") for p in status["curve"]] == [70.0, 120.0]
    # written again without a new evaluation: the evaluation is kept, not counted twice
    again = merge_training(status, [learner(iteration=31), *evals], [], NOW + 1)
    assert again["evaluation"]["count"] == 4
    assert len(again["curve"]) == 2  # no env steps/s reported: no point without a figure to draw


def test_nan_and_infinity_are_named_never_written_as_numbers() -> None:
    latest = [
        learner(iteration=7, iterationsPerSecond=math.nan, loss=math.inf),
        collector("c0", envStepsPerSecond=-math.inf),
    ]
    nan_eval = [evaluation(7, math.nan)]
    status = merge_training(None, [*latest, *nan_eval], nan_eval, NOW)
    assert status["nonFinite"] == ["envStepsPerSecond", "iterationsPerSecond", "loss", "return"]
    assert "iterationsPerSecond" not in status and "envStepsPerSecond" not in status and "evaluation" not in status
    json.dumps(status, allow_nan=False)  # the API server's JSON has no NaN: this raises if one got through


def test_the_curve_stays_bounded_and_keeps_its_start_and_newest_points() -> None:
    status: TrainingStatus = {}
    for i in range(1, 1001):
        status = merge_training(status, [learner(iteration=i), collector("c", envStepsPerSecond=float(i))], [], NOW)
    curve = status["curve"]
    assert len(curve) <= MAX_CURVE
    assert curve[0]["iteration"] == 1 and curve[-1]["iteration"] == 1000
    iterations = [p["iteration"] for p in curve]
    assert iterations == sorted(set(iterations))
    assert iterations[-10:] == list(range(991, 1001))  # the newest keep their resolution


def test_nothing_reported_merges_to_what_was_written() -> None:
    before: TrainingStatus = {"iteration": 3, "evaluation": {"value": 1.0, "count": 1}}
    assert merge_training(before, [], [], NOW) == before
    assert merge_training(None, [], [], NOW) == {}


def test_the_learner_furthest_along_speaks_for_the_job() -> None:
    behind = Report("learner", "learner-1", {"iteration": 50, "iterationsPerSecond": 1.0}, NOW, "t")
    status = merge_training(None, [behind, learner(iteration=60, iterationsPerSecond=2.0)], [], NOW)
    assert (status["iteration"], status["iterationsPerSecond"]) == (60, 2.0)
