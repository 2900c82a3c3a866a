"""The lifecycle fields: successPolicy, activeDeadlineSeconds, ttlSecondsAfterFinished, failurePolicy, suspend
(validation, model, Python API)."""

from __future__ import annotations

from typing import Any

import pytest

from dihera import experiment as ex
from dihera import load_job, validate
from dihera.model import FailurePolicy, SuccessOperator, SuccessPolicy
from tests.builders import job, task


def messages(manifest: Any) -> list[str]:
    return [str(p) for p in validate(manifest)]


def test_a_job_without_them_has_none() -> None:
    j = load_job(job(task("learner"), task("collector")))
    assert j.success_policy is None and j.active_deadline_seconds is None and j.ttl_seconds_after_finished is None
    spec = j.to_manifest()["spec"]
    assert not {"successPolicy", "activeDeadlineSeconds", "ttlSecondsAfterFinished", "suspend"} & set(spec)
    assert j.suspend is False and j.drop_tasks == frozenset()
    assert all(t.failure_policy is FailurePolicy.FAIL_JOB and "failurePolicy" not in t.to_dict() for t in j.tasks)


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


def test_failure_policy_and_suspend_are_loaded_typed_and_written_back() -> None:
    collector = {**task("collector", replicas=3), "failurePolicy": "DropReplica"}
    j = load_job(job(task("learner"), collector, suspend=True, minReplicas=2))
    assert j.suspend is True and j.drop_tasks == frozenset({"collector"})
    assert j.task("collector").failure_policy is FailurePolicy.DROP_REPLICA
    assert j.task("learner").failure_policy is FailurePolicy.FAIL_JOB
    spec = j.to_manifest()["spec"]
    assert spec["suspend"] is True and spec["tasks"][1]["failurePolicy"] == "DropReplica"
    assert "failurePolicy" not in spec["tasks"][0]
    assert load_job(j.to_manifest()) == j


@pytest.mark.parametrize(
    ("spec", "tasks", "expected"),
    [
        (
            {},
            [{**task("collector"), "failurePolicy": "Drop"}],
            ["spec.tasks[0].failurePolicy: 'Drop' is not valid; valid values: FailJob, DropReplica"],
        ),
        ({"suspend": "yes"}, [task("learner")], ["spec.suspend: must be of type boolean, got 'yes'"]),
        (
            {},
            [
                task("learner"),
                {**task("none", name="ddp"), "failurePolicy": "DropReplica", "envProvider": {"name": "torch"}},
            ],
            [
                "spec.tasks[1].failurePolicy: 'DropReplica' removes replicas from the running job, but the task's "
                "torch envProvider does not allow scaling; valid: 'FailJob', or set "
                "spec.tasks[1].envProvider.allowScaling: true"
            ],
        ),
    ],
)
def test_failure_policy_and_suspend_problems_name_the_field_and_the_value(
    spec: dict[str, Any], tasks: list[dict[str, Any]], expected: list[str]
) -> None:
    assert messages(job(*tasks, **spec)) == expected


def test_drop_replica_on_a_provider_task_that_allows_scaling_is_valid() -> None:
    ddp = {**task("none", name="ddp"), "failurePolicy": "DropReplica"}
    ddp["envProvider"] = {"name": "torch", "allowScaling": True}
    assert messages(job(task("learner"), ddp)) == []


def test_the_python_api_sets_failure_policy_and_suspend() -> None:
    j = ex.dijob(
        "dqn",
        [ex.task("learner", image="img"), ex.task("collector", replicas=2, image="img", failure_policy="DropReplica")],
        suspend=True,
    )
    assert j.suspend and j.drop_tasks == frozenset({"collector"})
    with pytest.raises(ValueError, match="'Drop' is not a valid FailurePolicy"):
        ex.task("collector", image="img", failure_policy="Drop")
