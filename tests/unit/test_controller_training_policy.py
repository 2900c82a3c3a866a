"""spec.trainingPolicy as a phase policy (dihera/controller/decide/training.py): status.training ends a running
job Succeeded or Failed with a Kubernetes-style reason, after the failure policies."""

from __future__ import annotations

import dataclasses
from typing import Any

from dihera.controller.decide.status import StatusUpdate, compute_status
from dihera.model import Plateau, TrainingPolicy, TrainingTarget
from tests.unit.jobviews import T1, observe, pod, running, workflow

STOP = TrainingPolicy(target=TrainingTarget("evaluationReturn", 195.0), plateau=Plateau(3))


def after(training: dict[str, Any] | None, policy: TrainingPolicy | None = STOP, pods: Any = None) -> StatusUpdate:
    obs = observe(workflow(), running() if pods is None else pods, backoff=0)
    old: dict[str, Any] = {"phase": "Running", "restarts": 0, "membershipGeneration": 1}
    if training is not None:
        old["training"] = training
    view = obs.view(old)
    assert view.job is not None
    view = dataclasses.replace(view, job=dataclasses.replace(view.job, training_policy=policy))
    return compute_status(view, obs.hold(), T1)


def test_a_return_at_the_stop_value_succeeds_the_running_job() -> None:
    update = after({"iteration": 900, "evaluation": {"value": 196.5, "iteration": 900, "best": 196.5}})
    assert update.status["phase"] == "Succeeded"
    condition = update.status["conditions"][-1]
    assert condition["reason"] == "TrainingTargetReached" and "196.5" in condition["message"]
    assert [e.reason for e in update.events] == ["TrainingTargetReached"]


def test_below_the_stop_value_or_without_figures_or_policy_the_job_runs_on() -> None:
    assert after({"evaluation": {"value": 150.0}}).status["phase"] == "Running"
    assert after(None).status["phase"] == "Running"
    assert after({"evaluation": {"value": 196.5}}, policy=None).status["phase"] == "Running"


def test_a_nan_loss_fails_the_job_with_a_warning() -> None:
    update = after({"iteration": 40, "nonFinite": ["loss"]})
    assert update.status["phase"] == "Failed"
    assert update.status["conditions"][-1]["reason"] == "NonFiniteMetric"
    assert [(e.type, e.reason) for e in update.events] == [("Warning", "NonFiniteMetric")]


def test_a_plateau_succeeds_with_its_reason() -> None:
    curve = [{"iteration": i * 100, "value": v} for i, v in enumerate([10.0, 80.0, 120.0, 119.0, 118.0, 120.0])]
    update = after({"evaluation": {"value": 120.0, "best": 120.0, "bestIteration": 200}, "curve": curve})
    assert update.status["phase"] == "Succeeded"
    assert update.status["conditions"][-1]["reason"] == "TrainingPlateaued"


def test_a_replica_out_of_retries_fails_the_job_before_the_target_counts() -> None:
    failed = [pod("learner", 0), pod("collector", 0), pod("collector", 1, "Failed", False, code=3)]
    update = after({"evaluation": {"value": 196.5}}, pods=failed)
    assert update.status["phase"] == "Failed" and update.status["conditions"][-1]["reason"] != "TrainingTargetReached"
