"""spec.successPolicy (pure): which replicas decide success, and what the status says then."""

from __future__ import annotations

import pytest

from dihera.controller.decide.cleanup import plan_cleanup
from dihera.controller.decide.replicas import ReplicaState
from dihera.controller.decide.success import success_reached
from dihera.model import CleanPodPolicy, SuccessOperator, SuccessPolicy
from tests.unit.jobviews import T1, observe, pod, status_after, workflow

ALL, ANY = SuccessOperator.ALL, SuccessOperator.ANY


def state(task: str, index: int, phase: str | None) -> ReplicaState:
    return ReplicaState(task=task, index=index, rank=index, hostname=f"job-{task}-{index}", attempt=0, pod_phase=phase)


LEARNER_DONE = [state("learner", 0, "Succeeded"), state("collector", 0, "Running"), state("collector", 1, "Running")]
ONE_LEARNER_DONE = [state("learner", 0, "Succeeded"), state("learner", 1, "Running"), state("collector", 0, "Running")]
EVERY_ONE_DONE = [state("learner", 0, "Succeeded"), state("collector", 0, "Succeeded")]


@pytest.mark.parametrize(
    ("policy", "states", "expected"),
    [
        (None, LEARNER_DONE, None),
        (None, EVERY_ONE_DONE, "all 2 replicas succeeded"),
        (None, [], None),
        (
            SuccessPolicy(ANY, ("learner",)),
            LEARNER_DONE,
            "replica learner-0 of learner succeeded (successPolicy Any); "
            "2 unfinished replica(s) are stopped as cleanPodPolicy says",
        ),
        (
            SuccessPolicy(ALL, ("learner",)),
            LEARNER_DONE,
            "all 1 replicas of learner succeeded (successPolicy All); "
            "2 unfinished replica(s) are stopped as cleanPodPolicy says",
        ),
        (SuccessPolicy(ALL, ("learner",)), ONE_LEARNER_DONE, None),
        (SuccessPolicy(ANY, ("learner",)), ONE_LEARNER_DONE, "replica learner-0 of learner succeeded"),
        (SuccessPolicy(ANY, ("collector",)), LEARNER_DONE, None),
        (SuccessPolicy(ALL, ()), LEARNER_DONE, None),
        (SuccessPolicy(ALL, ()), EVERY_ONE_DONE, "all 2 replicas of learner, collector succeeded (successPolicy All)"),
        (SuccessPolicy(ANY, ()), LEARNER_DONE, "replica learner-0 of learner, collector succeeded"),
        (SuccessPolicy(ANY, ("learner",)), [state("learner", 0, "Failed"), state("collector", 0, "Running")], None),
    ],
)
def test_success_reached(policy: SuccessPolicy | None, states: list[ReplicaState], expected: str | None) -> None:
    got = success_reached(policy, states)
    if expected is None:
        assert got is None
    else:
        assert got is not None and got.startswith(expected), got


LEARNER_EXITED = [pod("learner", 0, "Succeeded", False), pod("collector", 0), pod("collector", 1)]


def test_any_on_the_learner_succeeds_the_job_while_collectors_run() -> None:
    obs = observe(workflow(), LEARNER_EXITED, success_policy=SuccessPolicy(ANY, ("learner",)))
    update = status_after(obs, {"phase": "Running", "restarts": 0}, T1)
    assert update.status["phase"] == "Succeeded" and update.status["restarts"] == 0
    assert update.status["completionTimestamp"] == T1
    assert "successPolicy Any" in update.status["conditions"][-1]["message"]
    assert [e.reason for e in update.events] == ["JobSucceeded"]


def test_without_a_policy_the_same_observation_is_running() -> None:
    update = status_after(observe(workflow(), LEARNER_EXITED), {"phase": "Running"}, T1)
    assert update.status["phase"] == "Running"


def test_a_failure_policy_answers_before_success() -> None:
    """A replica out of retries fails the job even if the learner succeeded in the same observation."""
    failed = [pod("learner", 0, "Succeeded", False), pod("collector", 0), pod("collector", 1, "Failed", False, code=3)]
    obs = observe(workflow(), failed, backoff=0, success_policy=SuccessPolicy(ANY, ("learner",)))
    assert status_after(obs, {"phase": "Running"}, T1).status["phase"] == "Failed"


@pytest.mark.parametrize(
    ("policy", "shutdown", "deleted"),
    [
        (CleanPodPolicy.RUNNING, True, ("job-collector-0-0", "job-collector-1-0")),
        (CleanPodPolicy.ALL, True, ("job-collector-0-0", "job-collector-1-0", "job-learner-0-0")),
        (CleanPodPolicy.NONE, False, ()),
    ],
)
def test_the_unfinished_replicas_are_stopped_by_clean_pod_policy(
    policy: CleanPodPolicy, shutdown: bool, deleted: tuple[str, ...]
) -> None:
    """The Workflow is stopped first, so Argo's retryStrategy does not bring the deleted collectors back."""
    plan = plan_cleanup(policy, "Succeeded", workflow(), LEARNER_EXITED)
    assert plan.shutdown_workflow is shutdown and plan.delete_pods == deleted
