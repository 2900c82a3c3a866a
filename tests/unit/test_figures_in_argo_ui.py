"""The RL figures in the Argo UI: the description's sentence (dihera.argo_ui.training_summary), what the controller
writes to the Workflow (dihera.controller.decide.figures) and a scale's rewrite keeping it (dihera.scaling)."""

from __future__ import annotations

import copy
from typing import Any

from dihera import plan_membership
from dihera.argo_ui import describe, training_summary
from dihera.constants import ANNOTATION_GENERATION, ANNOTATION_TRAINING_SUMMARY, ANNOTATION_WORKFLOW_DESCRIPTION
from dihera.controller.decide.figures import figures_annotations
from dihera.controller.decide.view import JobView
from dihera.shapes.training import TrainingStatus
from dihera.shapes.workflow import as_workflow
from tests.unit.scaled_job import base_state, patched_workflow

TRAINING: TrainingStatus = {
    "iteration": 900,
    "envStepsPerSecond": 452.31,
    "dataWaitFraction": 0.104,
    "policyLag": {"p50": 2.0, "max": 5},
    "evaluation": {"value": 197.04, "iteration": 900, "best": 197.04, "bestIteration": 900},
}
SENTENCE = (
    "Training: iteration 900, return 197 (best 197 at iteration 900), 452 env steps/s, data wait 10%, policy lag 2."
)


def job_view(training: TrainingStatus | None, workflow_annotations: dict[str, str] | None = None) -> JobView:
    """BASE (learner, 2 collectors, evaluator) as rendered, Running, with ``training`` in its status."""
    job, membership, workflow = base_state()
    workflow = copy.deepcopy(workflow)
    workflow["metadata"]["annotations"].update(workflow_annotations or {})
    status: dict[str, Any] = {"phase": "Running", "membershipGeneration": membership.generation}
    if training is not None:
        status["training"] = training
    body = {**job.to_manifest(), "status": status}
    return JobView(body=body, job=job, membership=membership, workflow=as_workflow(workflow))


def test_the_sentence_says_each_reported_figure_rounded_as_read() -> None:
    assert training_summary(TRAINING) == SENTENCE
    assert training_summary({"iteration": 3}) == "Training: iteration 3."
    assert training_summary({"nonFinite": ["loss"]}) == "Training: non-finite: loss."
    assert training_summary({}) is None
    # a figure that barely moves keeps the sentence: the Workflow is not rewritten for it
    assert training_summary({**TRAINING, "envStepsPerSecond": 452.49, "dataWaitFraction": 0.1}) == SENTENCE


def test_the_description_shows_the_figures_after_the_membership_s_sentence() -> None:
    tasks = [("learner", "learner", 1), ("collector", "collector", 2)]
    text = describe("team-a/dqn", tasks, 2, SENTENCE)
    first, second, *_ = text.split("\n\n")
    assert first == "3 replicas: learner 1, collector 2 (membership generation 2)."
    assert second == SENTENCE
    assert describe("team-a/dqn", tasks, 2) == text.replace(SENTENCE + "\n\n", "")


def test_the_controller_writes_the_figures_once_and_not_before_any_are_reported() -> None:
    assert figures_annotations(job_view(None)) is None
    wanted = figures_annotations(job_view(TRAINING))
    assert wanted is not None
    assert wanted[ANNOTATION_TRAINING_SUMMARY] == SENTENCE
    assert wanted[ANNOTATION_WORKFLOW_DESCRIPTION].split("\n\n")[1] == SENTENCE
    assert wanted[ANNOTATION_WORKFLOW_DESCRIPTION].startswith("4 replicas: learner 1, collector 2, evaluator 1")
    # shown already: nothing to write
    assert figures_annotations(job_view(TRAINING, wanted)) is None


def test_a_workflow_still_converging_to_another_membership_is_left_to_the_scale() -> None:
    assert figures_annotations(job_view(TRAINING, {ANNOTATION_GENERATION: "7"})) is None


def test_a_scale_rewrites_the_description_for_its_membership_and_keeps_the_figures() -> None:
    job, membership, workflow = base_state()
    shown = figures_annotations(job_view(TRAINING))
    assert shown is not None
    workflow["metadata"]["annotations"].update(shown)
    bigger = plan_membership(job.with_replicas("collector", 4), membership)
    after = patched_workflow(workflow, bigger)["metadata"]["annotations"]
    description = after[ANNOTATION_WORKFLOW_DESCRIPTION]
    assert description.startswith("6 replicas: learner 1, collector 4, evaluator 1 (membership generation 2).")
    assert description.split("\n\n")[1] == SENTENCE
    assert after[ANNOTATION_TRAINING_SUMMARY] == SENTENCE
