"""The rules on a job's tasks (pure): their names and types, and their replicas against min/maxReplicas.

Each is a twin of one CEL rule of the CRD (:mod:`dihera.validation.cel` maps them): the API server refuses the
job with the rule's message; these report every offending task with its field path and value, on a spec with
the schema's defaults applied (a task without a name is named after its type). The task-order rule is
:mod:`dihera.node_ids`'; each task's pod template is :mod:`dihera.validation.pods`'.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from dihera.errors import Problem
from dihera.model import TaskType
from dihera.validation.structure import SINGLETON_TYPES, Defaulted

__all__ = [
    "cel_min_not_above_max",
    "cel_none_task_named",
    "cel_one_task_per_singleton_type",
    "cel_total_at_least_min",
    "cel_total_at_most_max",
    "cel_unique_task_names",
]


def cel_none_task_named(job: Defaulted) -> list[Problem]:
    """A task of type none needs a name (the others are named after their type)."""
    return [
        Problem(f"spec.tasks[{i}].name", "is required for a task of type none")
        for i, t in enumerate(job.tasks)
        if t.get("type") == TaskType.NONE and "name" not in t
    ]


def cel_unique_task_names(job: Defaulted) -> list[Problem]:
    """No two tasks share a name."""
    tasks = job.tasks
    names = Counter(t["name"] for t in tasks if isinstance(t.get("name"), str))
    return [
        Problem(
            f"spec.tasks[{i}].name",
            f"{t['name']!r} is used by {names[t['name']]} tasks; task names must be unique "
            "(a task without a name is named after its type)",
        )
        for i, t in enumerate(tasks)
        if isinstance(t.get("name"), str) and names[t["name"]] > 1
    ]


def cel_one_task_per_singleton_type(job: Defaulted) -> list[Problem]:
    """At most one task of each type learner, collector and evaluator."""
    tasks = job.tasks
    types = Counter(t["type"] for t in tasks if isinstance(t.get("type"), str))
    return [
        Problem(
            f"spec.tasks[{i}].type",
            f"{t['type']!r} is the type of {types[t['type']]} tasks; "
            "at most one task of each type learner, collector and evaluator",
        )
        for i, t in enumerate(tasks)
        if t.get("type") in SINGLETON_TYPES and types[t["type"]] > 1
    ]


def _total_replicas(tasks: list[Mapping[str, object]]) -> int:
    """The replicas of all tasks (a count of the wrong type is the schema's problem: not counted)."""
    return sum(n for t in tasks if isinstance(n := t.get("replicas", 1), int))


def cel_min_not_above_max(job: Defaulted) -> list[Problem]:
    """minReplicas <= maxReplicas."""
    lo, hi = job.spec.get("minReplicas"), job.spec.get("maxReplicas")
    if isinstance(lo, int) and isinstance(hi, int) and lo > hi:
        return [Problem("spec.minReplicas", f"{lo} must not exceed maxReplicas ({hi})")]
    return []


def cel_total_at_least_min(job: Defaulted) -> list[Problem]:
    """minReplicas <= the total replicas of all tasks."""
    lo, total = job.spec.get("minReplicas"), _total_replicas(job.tasks)
    if isinstance(lo, int) and total < lo:
        return [Problem("spec.tasks", f"the total replicas of all tasks ({total}) must be at least minReplicas ({lo})")]
    return []


def cel_total_at_most_max(job: Defaulted) -> list[Problem]:
    """The total replicas of all tasks <= maxReplicas."""
    hi, total = job.spec.get("maxReplicas"), _total_replicas(job.tasks)
    if isinstance(hi, int) and total > hi:
        return [Problem("spec.tasks", f"the total replicas of all tasks ({total}) must be at most maxReplicas ({hi})")]
    return []
