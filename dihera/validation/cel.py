"""The CRD's CEL rules and their Python twins (pure): which function checks what each rule checks.

The CRD carries cross-field rules as CEL ``x-kubernetes-validations`` (``schemas/dijob.v2alpha1.json``); the API
server refuses a job breaking one with the rule's message only. Each rule has one Python twin that reports
**every** offending field with its path, its value and what would be valid: a function named ``cel_*`` in the
module of its concern (:mod:`dihera.validation.tasks`, :mod:`dihera.validation.names`,
:mod:`dihera.validation.lifecycle`, :mod:`dihera.validation.autoscaling`), listed in :data:`CEL_TWINS` against
the rule's place in the schema and its message, verbatim. Two rules are checked by another module's function
together with rules the CRD does not have: :data:`CEL_TWINS_ELSEWHERE` names them. tests/unit/test_validation_cel.py
fails when a rule of the schema has no twin here, when a ``cel_*`` function is not listed, or when a rule's message
or place changes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from dihera.artifacts import artifact_problems
from dihera.errors import Problem
from dihera.render.providers.base import role_problems
from dihera.validation import autoscaling, lifecycle, names, tasks
from dihera.validation.structure import Defaulted

__all__ = ["CEL_TWINS", "CEL_TWINS_ELSEWHERE", "CelTwin", "CelTwinElsewhere", "twin_problems"]


@dataclass(frozen=True)
class CelTwin:
    """A CEL rule of the CRD, by the schema node holding it (``spec``, ``spec.tasks[]``; ``""``: the DIJob) and its
    message, and the function that checks the same on a defaulted job."""

    node: str
    message: str
    twin: Callable[[Defaulted], list[Problem]]


@dataclass(frozen=True)
class CelTwinElsewhere:
    """A CEL rule checked by ``twin``, another module's function that checks more than the rule (``why``)."""

    node: str
    message: str
    twin: Callable[..., list[Problem]]
    why: str


#: Every CEL rule of the schema that this package checks, in the schema's order (the DIJob's, then spec's, then
#: a checkpoint's and a task's).
CEL_TWINS = (
    CelTwin("", "pod hostnames <job>-<task>-<index> must be at most 63 characters", names.cel_hostname_length),
    CelTwin(
        "spec",
        "task names must be unique (a task without a name is named after its type)",
        tasks.cel_unique_task_names,
    ),
    CelTwin(
        "spec",
        "at most one task of each type learner, collector and evaluator",
        tasks.cel_one_task_per_singleton_type,
    ),
    CelTwin("spec", "minReplicas must not exceed maxReplicas", tasks.cel_min_not_above_max),
    CelTwin("spec", "the total replicas of all tasks must be at least minReplicas", tasks.cel_total_at_least_min),
    CelTwin("spec", "the total replicas of all tasks must be at most maxReplicas", tasks.cel_total_at_most_max),
    CelTwin(
        "spec",
        "successPolicy.targetTasks must name tasks of the job (a task without a name is named after its type)",
        lifecycle.cel_success_targets_exist,
    ),
    CelTwin(
        "spec",
        "checkpoint.tasks must name tasks of the job (a task without a name is named after its type)",
        lifecycle.cel_checkpoint_tasks_exist,
    ),
    CelTwin(
        "spec.checkpoint",
        "checkpoint.size must be a quantity above zero (512Mi, 10Gi)",
        lifecycle.cel_checkpoint_size_above_zero,
    ),
    CelTwin("spec.tasks[]", "a task of type none must have a name", tasks.cel_none_task_named),
    CelTwin(
        "spec.tasks[]",
        "failurePolicy DropReplica removes replicas from a running job: a task with an envProvider needs "
        "envProvider.allowScaling: true",
        lifecycle.cel_drop_replica_allows_scaling,
    ),
    CelTwin(
        "spec.tasks[]",
        "autoscaling sizes collector tasks only: a task with autoscaling must be of type collector",
        autoscaling.cel_autoscaling_collector_only,
    ),
    CelTwin(
        "spec.tasks[].autoscaling",
        "autoscaling.minReplicas must not exceed autoscaling.maxReplicas",
        autoscaling.cel_autoscaling_min_not_above_max,
    ),
    CelTwin(
        "spec.tasks[].autoscaling",
        "autoscaling.targetDataWaitFraction must be above 0 and below 1",
        autoscaling.cel_autoscaling_data_wait_in_range,
    ),
    CelTwin(
        "spec.tasks[].autoscaling",
        "autoscaling.targetReplayRatio must be above 0",
        autoscaling.cel_autoscaling_replay_ratio_above_zero,
    ),
)

#: The CEL rules another module checks with its neighbouring rules; ``validate`` runs those functions whole.
CEL_TWINS_ELSEWHERE = (
    CelTwinElsewhere(
        "spec",
        "artifacts[].task must name a task of the job (a task without a name is named after its type)",
        artifact_problems,
        "spec.artifacts' rules (names unique and not Argo's, paths in the task's volumes) live together",
    ),
    CelTwinElsewhere(
        "spec.tasks[]",
        "envProvider.role must be a role of its provider: tensorflow chief, master, worker, ps or evaluator; "
        "mxnet scheduler, server or worker; torch takes no role",
        role_problems,
        "each env provider's roles are its module's (one valid role per task, none shared), run by provider_problems",
    ),
)


def twin_problems(job: Defaulted) -> list[Problem]:
    """Every problem of the twins of :data:`CEL_TWINS`, in the table's order."""
    return [problem for rule in CEL_TWINS for problem in rule.twin(job)]
