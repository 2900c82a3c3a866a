"""The lifecycle fields: successPolicy, activeDeadlineSeconds, ttlSecondsAfterFinished (validation, model)."""

from __future__ import annotations

from typing import Any

import pytest

from dihera import experiment as ex
from dihera import load_job, validate
from dihera.model import SuccessOperator, SuccessPolicy

from .builders import job, task


def messages(manifest: Any) -> list[str]:
    return [str(p) for p in validate(manifest)]


def test_a_job_without_them_has_none() -> None:
    j = load_job(job(task("learner"), task("collector")))
    assert j.success_policy is None and j.active_deadline_seconds is None and j.ttl_seconds_after_finished is None
    spec = j.to_manifest()["spec"]
    assert not {"successPolicy", "activeDeadlineSeconds", "ttlSecondsAfterFinished"} & set(spec)


def test_they_are_loaded_typed_and_written_back() -> None:
    manifest = job(
        task("learner"),
        task("collector"),
        successPolicy={"operator": "Any", "targetTasks": ["learner"]},
        activeDeadlineSeconds=3600,
        ttlSecondsAfterFinished=0,
    )
    j = load_job(manifest)
    assert j.success_policy == SuccessPolicy(SuccessOperator.ANY, ("learner",))
    assert j.active_deadline_seconds == 3600 and j.ttl_seconds_after_finished == 0
    spec = j.to_manifest()["spec"]
    assert spec["successPolicy"] == {"operator": "Any", "targetTasks": ["learner"]}
    assert spec["activeDeadlineSeconds"] == 3600 and spec["ttlSecondsAfterFinished"] == 0
    assert load_job(j.to_manifest()) == j


def test_operator_defaults_to_all_and_target_tasks_to_every_task() -> None:
    j = load_job(job(task("learner"), successPolicy={}))
    assert j.success_policy == SuccessPolicy(SuccessOperator.ALL, ())
    assert j.to_manifest()["spec"]["successPolicy"] == {"operator": "All"}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            {"successPolicy": {"targetTasks": ["lerner", "collector"]}},
            ["spec.successPolicy.targetTasks[0]: 'lerner' is not a task of the job; valid: learner, collector"],
        ),
        (
            {"successPolicy": {"operator": "Some"}},
            ["spec.successPolicy.operator: 'Some' is not valid; valid values: All, Any"],
        ),
        ({"activeDeadlineSeconds": 0}, ["spec.activeDeadlineSeconds: 0 is less than the minimum of 1"]),
        ({"ttlSecondsAfterFinished": -1}, ["spec.ttlSecondsAfterFinished: -1 is less than the minimum of 0"]),
        (
            {"successPolicy": {"targetTask": ["learner"]}},
            ["spec.successPolicy.targetTask: unknown field of the DIJob successPolicy; did you mean targetTasks?"],
        ),
    ],
)
def test_problems_name_the_field_and_the_value(spec: dict[str, Any], expected: list[str]) -> None:
    assert messages(job(task("learner"), task("collector"), **spec)) == expected


def test_target_tasks_follow_task_names_not_types() -> None:
    manifest = job(task("learner"), task("none", name="replay"), successPolicy={"targetTasks": ["replay"]})
    assert messages(manifest) == []


def test_the_python_api_passes_them_through() -> None:
    j = ex.dijob(
        "dqn",
        [ex.task("learner", image="img"), ex.task("collector", replicas=2, image="img")],
        successPolicy={"operator": "Any", "targetTasks": ["learner"]},
        activeDeadlineSeconds=600,
        ttlSecondsAfterFinished=60,
    )
    assert j.success_policy == SuccessPolicy(SuccessOperator.ANY, ("learner",))
    assert (j.active_deadline_seconds, j.ttl_seconds_after_finished) == (600, 60)
