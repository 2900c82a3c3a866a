"""The rules on collector autoscaling and the training policy (pure): ``spec.tasks[].autoscaling`` and
``spec.trainingPolicy``.

The schema holds each field's type, range and enum (a misspelt field or value names the nearest valid one). The
cross-field rules are CEL rules of the CRD with their twins here (:mod:`dihera.validation.cel`): autoscaling on a
collector task only, its minReplicas not above its maxReplicas, the data-wait target inside (0, 1), the replay-ratio
target above 0. Rules the CRD does not have: the bounds must leave room in the job's spec.minReplicas and
spec.maxReplicas, and a collector task with an envProvider must allow scaling (as failurePolicy DropReplica must).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, TypeGuard

from dihera.errors import Problem, format_value
from dihera.model import TaskType
from dihera.validation.structure import Defaulted, arr

__all__ = [
    "autoscaling_problems",
    "cel_autoscaling_collector_only",
    "cel_autoscaling_data_wait_in_range",
    "cel_autoscaling_min_not_above_max",
    "cel_autoscaling_replay_ratio_above_zero",
]


def _autoscaled(job: Defaulted) -> Iterator[tuple[int, Mapping[str, Any], Mapping[str, Any]]]:
    """``(i, task, autoscaling)`` of each task with an autoscaling object; i counts every item of spec.tasks."""
    for i, t in enumerate(arr(job.spec.get("tasks"))):
        if isinstance(t, Mapping) and isinstance(t.get("autoscaling"), Mapping):
            yield i, t, t["autoscaling"]


def _number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def cel_autoscaling_collector_only(job: Defaulted) -> list[Problem]:
    """Autoscaling sizes collectors: a learner's, an evaluator's or a ``none`` task's is refused."""
    return [
        Problem(
            f"spec.tasks[{i}].autoscaling",
            f"task {format_value(t.get('name') or t.get('type'))} is of type {format_value(t.get('type'))}; "
            "autoscaling sizes collector tasks only (the learner's appetite decides how many collectors feed it); "
            "valid: move autoscaling to the job's collector task, or remove it",
        )
        for i, t, _ in _autoscaled(job)
        if t.get("type") != TaskType.COLLECTOR
    ]


def cel_autoscaling_min_not_above_max(job: Defaulted) -> list[Problem]:
    """``autoscaling.minReplicas`` <= ``autoscaling.maxReplicas``."""
    problems = []
    for i, _, a in _autoscaled(job):
        low, high = a.get("minReplicas"), a.get("maxReplicas")
        if _number(low) and _number(high) and low > high:
            problems.append(
                Problem(
                    f"spec.tasks[{i}].autoscaling.minReplicas",
                    f"{format_value(low)} is above autoscaling.maxReplicas {format_value(high)}; "
                    f"valid: at most {format_value(high)}",
                )
            )
    return problems


def cel_autoscaling_data_wait_in_range(job: Defaulted) -> list[Problem]:
    """``autoscaling.targetDataWaitFraction`` is inside (0, 1): a share of the learner's wall time, neither never
    nor always waiting."""
    problems = []
    for i, _, a in _autoscaled(job):
        value = a.get("targetDataWaitFraction")
        if _number(value) and not 0 < value < 1:
            problems.append(
                Problem(
                    f"spec.tasks[{i}].autoscaling.targetDataWaitFraction",
                    f"{format_value(value)} is not inside (0, 1): it is the share of the learner's wall time spent "
                    "waiting for data above which collectors are added; valid: e.g. 0.2",
                )
            )
    return problems


def cel_autoscaling_replay_ratio_above_zero(job: Defaulted) -> list[Problem]:
    """``autoscaling.targetReplayRatio`` is above 0 (samples consumed per env step collected)."""
    problems = []
    for i, _, a in _autoscaled(job):
        value = a.get("targetReplayRatio")
        if _number(value) and value <= 0:
            problems.append(
                Problem(
                    f"spec.tasks[{i}].autoscaling.targetReplayRatio",
                    f"{format_value(value)} is not above 0: it is the samples the learner consumes per env step "
                    "collected below which collectors are removed; valid: a number above 0, e.g. 1, or leave it "
                    "out to never remove collectors for a low replay ratio",
                )
            )
    return problems


def _others(job: Defaulted, index: int) -> int:
    """The replicas of every task but ``spec.tasks[index]``."""
    return sum(
        t["replicas"]
        for j, t in enumerate(arr(job.spec.get("tasks")))
        if j != index and isinstance(t, Mapping) and _number(t.get("replicas"))
    )


def _bound_problems(job: Defaulted, i: int, a: Mapping[str, Any]) -> list[Problem]:
    """The autoscaling bounds leave room in the job's spec.minReplicas and spec.maxReplicas."""
    problems = []
    others = _others(job, i)
    low, high = a.get("minReplicas"), a.get("maxReplicas")
    job_max, job_min = job.spec.get("maxReplicas"), job.spec.get("minReplicas")
    if _number(low) and _number(job_max) and others + low > job_max:
        problems.append(
            Problem(
                f"spec.tasks[{i}].autoscaling.minReplicas",
                f"{format_value(low)} collectors and the other tasks' {others} replicas exceed spec.maxReplicas "
                f"{format_value(job_max)}; valid: at most {max(job_max - others, 0)}",
            )
        )
    if _number(high) and _number(job_min) and others + high < job_min:
        problems.append(
            Problem(
                f"spec.tasks[{i}].autoscaling.maxReplicas",
                f"{format_value(high)} collectors and the other tasks' {others} replicas stay below spec.minReplicas "
                f"{format_value(job_min)}; valid: at least {job_min - others}",
            )
        )
    return problems


def autoscaling_problems(job: Defaulted) -> list[Problem]:
    """The rules the CRD does not have: the bounds against the job's, and scaling allowed by the envProvider."""
    problems = []
    for i, t, a in _autoscaled(job):
        problems += _bound_problems(job, i, a)
        provider = t.get("envProvider")
        if isinstance(provider, Mapping) and provider.get("allowScaling") is not True:
            problems.append(
                Problem(
                    f"spec.tasks[{i}].autoscaling",
                    f"autoscaling changes the task's replicas while it runs, but its {provider.get('name')} "
                    f"envProvider does not allow scaling; valid: set spec.tasks[{i}].envProvider.allowScaling: true, "
                    "or remove autoscaling",
                )
            )
    return problems
