"""spec.tasks[].autoscaling and spec.trainingPolicy refused field by field when wrong (dihera/validation/
autoscaling.py and the schema), with the nearest valid name for typos; a valid job builds the typed fields."""

from __future__ import annotations

from typing import Any

import pytest

from dihera.model import DEFAULT_SCALE_DOWN, Autoscaling, Plateau, TrainingPolicy, TrainingTarget
from dihera.validation import load_job, validate
from tests.builders import job, task


def collector(**autoscaling: Any) -> dict[str, Any]:
    return {**task("collector", "collector"), "autoscaling": {"maxReplicas": 4, **autoscaling}}


def problems(*tasks: dict[str, Any], **spec: Any) -> dict[str, str]:
    return {p.path: p.message for p in validate(job(task("learner"), *tasks, **spec))}


@pytest.mark.parametrize(
    ("autoscaling", "path", "says"),
    [
        ({"minReplicas": 5}, "spec.tasks[1].autoscaling.minReplicas", "above autoscaling.maxReplicas 4"),
        ({"targetDataWaitFraction": 0}, "spec.tasks[1].autoscaling.targetDataWaitFraction", "not inside (0, 1)"),
        ({"targetDataWaitFraction": 1.5}, "spec.tasks[1].autoscaling.targetDataWaitFraction", "1"),
        ({"targetReplayRatio": 0}, "spec.tasks[1].autoscaling.targetReplayRatio", "not above 0"),
        ({"targetDataWaitFracton": 0.3}, "spec.tasks[1].autoscaling.targetDataWaitFracton", "targetDataWaitFraction"),
        ({"behavior": {"scaleUp": {"policies": [{"type": "Pod", "value": 1, "periodSeconds": 15}]}}},
         "spec.tasks[1].autoscaling.behavior.scaleUp.policies[0].type", "Pods"),
        ({"behavior": {"scaleDown": {"selectPolicy": "Maximum"}}},
         "spec.tasks[1].autoscaling.behavior.scaleDown.selectPolicy", "Max"),
        ({"behaviour": {}}, "spec.tasks[1].autoscaling.behaviour", "behavior"),
    ],
)  # fmt: skip
def test_a_wrong_autoscaling_field_is_named_with_what_is_valid(
    autoscaling: dict[str, Any], path: str, says: str
) -> None:
    found = problems(collector(**autoscaling))
    assert path in found and says in found[path], found


def test_autoscaling_on_a_learner_task_is_refused() -> None:
    learner = {**task("learner"), "autoscaling": {"maxReplicas": 2}}
    found = {p.path: p.message for p in validate(job(learner))}
    assert "autoscaling sizes collector tasks only" in found["spec.tasks[0].autoscaling"]


def test_a_max_replicas_is_required() -> None:
    c = {**task("collector", "collector"), "autoscaling": {}}
    assert any("maxReplicas" in f"{p.path} {p.message}" for p in validate(job(task("learner"), c)))


def test_the_bounds_must_fit_the_job_s_and_the_provider_must_allow_scaling() -> None:
    found = problems(collector(minReplicas=3), maxReplicas=3)  # 1 learner + 3 collectors > 3
    assert "valid: at most 2" in found["spec.tasks[1].autoscaling.minReplicas"]
    torch = {**collector(), "envProvider": {"name": "torch"}}
    assert "allowScaling: true" in problems(torch)["spec.tasks[1].autoscaling"]


@pytest.mark.parametrize(
    ("policy", "path"),
    [
        ({"target": {"metric": "evalReturn", "value": 195}}, "spec.trainingPolicy.target.metric"),
        ({"target": {"metric": "evaluationReturn"}}, "spec.trainingPolicy.target"),
        ({"plateau": {"evaluations": 0}}, "spec.trainingPolicy.plateau.evaluations"),
        ({"plateau": {"evaluations": 3, "minDelta": -1}}, "spec.trainingPolicy.plateau.minDelta"),
        ({"stopValue": 195}, "spec.trainingPolicy.stopValue"),
    ],
)
def test_a_wrong_training_policy_field_is_named(policy: dict[str, Any], path: str) -> None:
    assert any(p.startswith(path) for p in problems(trainingPolicy=policy)), problems(trainingPolicy=policy)


def test_a_valid_job_builds_the_typed_fields_and_writes_them_back() -> None:
    policy = {"target": {"metric": "evaluationReturn", "value": 195}, "plateau": {"evaluations": 5}}
    built = load_job(job(task("learner"), collector(targetReplayRatio=2), trainingPolicy=policy))
    auto = built.task("collector").autoscaling
    assert auto == Autoscaling(max_replicas=4, target_replay_ratio=2.0)
    assert auto.scale_down == DEFAULT_SCALE_DOWN and auto.stale_after_seconds == 60
    assert built.training_policy == TrainingPolicy(TrainingTarget("evaluationReturn", 195.0), Plateau(5))
    assert load_job(built.to_manifest()) == built
