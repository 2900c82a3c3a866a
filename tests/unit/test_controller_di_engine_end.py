"""DI-engine's end (pure): without a successPolicy, a job whose learners and evaluators have all Succeeded
gives its other replicas ``diengine/finish-grace-seconds`` (default 90) to end, then Succeeds; a collector
that joined late (and never heard DI-engine's ``finish``) does not keep it Running forever."""

from __future__ import annotations

from typing import Any

import pytest

from dihera.constants import ANNOTATION_FINISH_GRACE, DEFAULT_FINISH_GRACE
from dihera.controller.decide.replicas import ended_at
from dihera.model import SuccessOperator, SuccessPolicy, TaskType
from dihera.validation import validate
from tests.builders import PodBuilder
from tests.unit.jobviews import JOB, Observed, observe, pod, status_after, workflow

#: when the learner's containers ended, and moments after it
ENDED = "2026-01-01T00:10:00Z"
SOON = "2026-01-01T00:10:30Z"  # 30 s later
LATER = "2026-01-01T00:11:31Z"  # 91 s later


def ended(task: str, index: int, at: str = ENDED, code: int = 0) -> dict[str, Any]:
    """A replica's pod whose containers (Argo's wait and main) ended at ``at`` with ``code``."""
    phase = "Succeeded" if code == 0 else "Failed"
    built = PodBuilder(f"{JOB}-{task}-{index}-0").replica(JOB, task, index).phase(phase).ready(False)
    return built.terminated("wait", 0, finishedAt=at).terminated("main", code, finishedAt=at).obj()


def late_collector(**kw: Any) -> Observed:
    """The learner ended at ENDED; both collectors still collect (one joined late and never heard finish)."""
    return observe(workflow(), [ended("learner", 0), pod("collector", 0), pod("collector", 1)], **kw)


def test_inside_the_grace_the_job_runs_and_the_pass_is_due_when_it_ends() -> None:
    update = status_after(late_collector(), {"phase": "Running"}, SOON)
    assert update.phase == "Running"
    assert update.wakeup == pytest.approx(DEFAULT_FINISH_GRACE - 30)


def test_past_the_grace_the_job_succeeds_and_says_why() -> None:
    update = status_after(late_collector(), {"phase": "Running", "restarts": 0}, LATER)
    assert update.phase == "Succeeded" and update.status["completionTimestamp"] == LATER
    message = update.status["conditions"][-1]["message"]
    assert "every replica of learner succeeded (DI-engine's end); 2 collector replica(s) still running 90 s" in message
    assert [e.reason for e in update.events] == ["JobSucceeded"]
    assert update.wakeup is None


def test_the_annotation_sets_the_grace() -> None:
    now = status_after(late_collector(annotations=((ANNOTATION_FINISH_GRACE, "0"),)), {"phase": "Running"}, SOON)
    assert now.phase == "Succeeded" and "0 s later" in now.status["conditions"][-1]["message"]
    longer = status_after(late_collector(annotations=((ANNOTATION_FINISH_GRACE, "600"),)), {"phase": "Running"}, LATER)
    assert longer.phase == "Running" and longer.wakeup == pytest.approx(600 - 91)


def test_a_success_policy_decides_instead() -> None:
    """With a successPolicy the user said when the job is done: DI-engine's end is not read."""
    policy = SuccessPolicy(SuccessOperator.ALL, ("collector",))
    update = status_after(late_collector(success_policy=policy), {"phase": "Running"}, LATER)
    assert update.phase == "Running" and update.wakeup is None


def test_an_evaluator_still_running_keeps_the_job_running() -> None:
    """Every learner and evaluator must have ended: the evaluator is what stops DI-engine's training."""
    types = (("collector", TaskType.EVALUATOR),)
    update = status_after(late_collector(types=types), {"phase": "Running"}, LATER)
    assert update.phase == "Running" and update.wakeup is None
    both = observe(workflow(), [ended("learner", 0), ended("collector", 0), pod("collector", 1)], types=types)
    assert status_after(both, {"phase": "Running"}, LATER).phase == "Running"  # collector-1 is an evaluator too


def test_tasks_without_di_engine_roles_wait_for_every_replica() -> None:
    """A job of ``none`` tasks only (no learner, no evaluator) Succeeds when every replica has (DI-orchestrator)."""
    types = (("learner", TaskType.NONE), ("collector", TaskType.NONE))
    update = status_after(late_collector(types=types), {"phase": "Running"}, LATER)
    assert update.phase == "Running" and update.wakeup is None


def test_replicas_of_none_tasks_are_not_waited_for() -> None:
    """A none task (a Redis broker) never ends by itself: once the learner has, nothing else is waited for."""
    update = status_after(late_collector(types=(("collector", TaskType.NONE),)), {"phase": "Running"}, SOON)
    assert update.phase == "Succeeded", update.status
    message = update.status["conditions"][-1]["message"]
    assert message.endswith("2 replica(s) of collector (not DI-engine's roles) are stopped as cleanPodPolicy says")


def test_a_learner_that_failed_is_not_an_end() -> None:
    obs = observe(workflow(), [ended("learner", 0, code=1), pod("collector", 0), pod("collector", 1)], backoff=3)
    update = status_after(obs, {"phase": "Running"}, LATER)
    assert update.phase != "Succeeded" and update.wakeup is None


def test_every_replica_done_succeeds_at_once() -> None:
    obs = observe(workflow(), [ended("learner", 0), ended("collector", 0), ended("collector", 1, at=SOON)])
    assert (
        status_after(obs, {"phase": "Running"}, SOON)
        .status["conditions"][-1]["message"]
        .startswith("all 3 replicas succeeded")
    )


def test_ended_at_is_the_last_user_container_to_end() -> None:
    two = PodBuilder("p").terminated("wait", 0, finishedAt=LATER).terminated("main", 0, finishedAt=ENDED)
    assert ended_at(two.terminated("sidecar", 0, finishedAt=SOON).obj()) == SOON  # Argo's wait is not the user's
    assert ended_at(PodBuilder("p").terminated("main", 0, finishedAt=ENDED).running("sidecar").obj()) is None
    assert ended_at(PodBuilder("p").obj()) is None


@pytest.mark.parametrize("value", ["90s", "-1", "", "1.5"])
def test_validation_names_the_annotation_and_the_value(value: str) -> None:
    manifest = {
        "apiVersion": "diengine.opendilab.org/v2alpha1",
        "kind": "DIJob",
        "metadata": {"name": "j", "annotations": {ANNOTATION_FINISH_GRACE: value}},
        "spec": {"tasks": [{"name": "learner", "type": "learner", "replicas": 1, "template": _template()}]},
    }
    problems = [str(p) for p in validate(manifest)]
    assert problems == [
        f"metadata.annotations.{ANNOTATION_FINISH_GRACE}: {value!r} is not a whole number of seconds >= 0 "
        "(0 stops the others as soon as the learners and evaluators have ended)"
    ]


def _template() -> dict[str, Any]:
    return {"spec": {"containers": [{"name": "main", "image": "i"}]}}


def evaluators_ended(learner: dict[str, Any]) -> Observed:
    """Both collector replicas are evaluators here, and reached the stop value at ENDED; the learner is
    ``learner``."""
    pods = [learner, ended("collector", 0), ended("collector", 1)]
    return observe(workflow(), pods, types=(("collector", TaskType.EVALUATOR),), backoff=3)


def test_the_evaluators_end_gives_a_learner_still_running_the_grace_then_stops_it() -> None:
    """A learner that failed as DI-engine ended (the kubelet evicted it during its last save) is started again
    by Argo with no evaluator left to end it: the job does not hang on it."""
    inside = status_after(evaluators_ended(pod("learner", 0)), {"phase": "Running"}, SOON)
    assert inside.phase == "Running" and inside.wakeup == pytest.approx(DEFAULT_FINISH_GRACE - 30)
    past = status_after(evaluators_ended(pod("learner", 0)), {"phase": "Running", "restarts": 1}, LATER)
    assert past.phase == "Succeeded", past.status
    message = past.status["conditions"][-1]["message"]
    assert message.startswith("every replica of collector succeeded (DI-engine's end); 1 learner replica(s) still")
    assert "restarted after it" in message and "cleanPodPolicy" in message


def test_a_learner_that_ended_with_the_evaluators_succeeds_the_job_at_once() -> None:
    update = status_after(evaluators_ended(ended("learner", 0, at=SOON)), {"phase": "Running"}, SOON)
    assert update.phase == "Succeeded" and update.status["conditions"][-1]["message"].startswith("all 3 replicas")
