"""The rules on a job's lifecycle fields (pure): successPolicy, failurePolicy, the checkpoint, the timing
annotations.

``backoffLimit``, ``activeDeadlineSeconds``, ``ttlSecondsAfterFinished`` and ``suspend`` need no rule beyond
their schema. ``successPolicy.targetTasks`` and ``checkpoint.tasks`` name tasks of the job, a ``DropReplica``
task with an env provider allows scaling, the checkpoint's size is above zero: the twins of CEL rules of the
CRD (:mod:`dihera.validation.cel`). The checkpoint volume's name and mount path are free in the pods that
mount it, and the annotations that hold seconds hold whole seconds: rules the CRD does not have.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from dihera.constants import ANNOTATION_FINISH_GRACE, ANNOTATION_PEER_WAIT_TIMEOUT, CHECKPOINT_VOLUME
from dihera.errors import Problem, format_value
from dihera.model import FailurePolicy, TaskType
from dihera.validation.structure import Defaulted, arr, obj

__all__ = [
    "cel_checkpoint_size_above_zero",
    "cel_checkpoint_tasks_exist",
    "cel_drop_replica_allows_scaling",
    "cel_success_targets_exist",
    "checkpoint_problems",
    "checkpoint_tasks",
    "seconds_annotation_problems",
]

_ZERO = re.compile(r"^0+(\.0+)?[A-Za-z]*$")  # a quantity of zero (the schema's pattern already holds)

#: Annotations that hold whole seconds >= 0, and what 0 means: the peer wait's bound (docs/rendering.md) and
#: the grace of the other replicas after DI-engine's end (docs/controller.md, "When a job succeeds").
_SECONDS_ANNOTATIONS = {
    ANNOTATION_PEER_WAIT_TIMEOUT: "0 turns the wait off",
    ANNOTATION_FINISH_GRACE: "0 stops the others as soon as the learners and evaluators have ended",
}


def seconds_annotation_problems(manifest: Mapping[str, object]) -> list[Problem]:
    """The job's annotations that hold seconds must hold whole seconds."""
    annotations = obj(obj(manifest.get("metadata")).get("annotations"))
    problems = []
    for name, zero in _SECONDS_ANNOTATIONS.items():
        if name in annotations and not str(annotations[name]).strip().isdigit():
            problems.append(
                Problem(
                    f"metadata.annotations.{name}",
                    f"{annotations[name]!r} is not a whole number of seconds >= 0 ({zero})",
                )
            )
    return problems


def cel_success_targets_exist(job: Defaulted) -> list[Problem]:
    """``successPolicy.targetTasks`` must name tasks of the job."""
    policy = job.spec.get("successPolicy")
    targets = policy.get("targetTasks") if isinstance(policy, Mapping) else None
    if not isinstance(targets, list):
        return []
    names = [n for t in job.tasks if isinstance(n := t.get("name"), str)]
    return [
        Problem(
            f"spec.successPolicy.targetTasks[{i}]",
            f"{format_value(n)} is not a task of the job; valid: {', '.join(names) or 'no task has a name'}",
        )
        for i, n in enumerate(targets)
        if isinstance(n, str) and n not in names
    ]


def cel_drop_replica_allows_scaling(job: Defaulted) -> list[Problem]:
    """DropReplica scales the task down: a task with an envProvider must allow scaling."""
    problems = []
    for i, t in enumerate(arr(job.spec.get("tasks"))):  # i: the index among all items, objects or not
        if not isinstance(t, Mapping) or t.get("failurePolicy") != FailurePolicy.DROP_REPLICA:
            continue
        provider = t.get("envProvider")
        if isinstance(provider, Mapping) and provider.get("allowScaling") is not True:
            problems.append(
                Problem(
                    f"spec.tasks[{i}].failurePolicy",
                    f"'DropReplica' removes replicas from the running job, but the task's {provider.get('name')} "
                    "envProvider does not allow scaling; valid: 'FailJob', or set "
                    f"spec.tasks[{i}].envProvider.allowScaling: true",
                )
            )
    return problems


def checkpoint_tasks(spec: Mapping[str, object]) -> list[str]:
    """The tasks mounting the checkpoint volume of a defaulted spec: ``checkpoint.tasks``, else the learner
    task, else every task."""
    ckpt = spec.get("checkpoint")
    if not isinstance(ckpt, Mapping):
        return []
    if isinstance(ckpt.get("tasks"), list):
        return [n for n in ckpt["tasks"] if isinstance(n, str)]
    tasks = [t for t in arr(spec.get("tasks")) if isinstance(t, Mapping) and isinstance(t.get("name"), str)]
    learners = [t["name"] for t in tasks if t.get("type") == TaskType.LEARNER]
    return learners or [t["name"] for t in tasks]


def cel_checkpoint_tasks_exist(job: Defaulted) -> list[Problem]:
    """``checkpoint.tasks`` must name tasks of the job."""
    ckpt = job.spec.get("checkpoint")
    if not isinstance(ckpt, Mapping):
        return []
    names = [n for t in job.tasks if isinstance(n := t.get("name"), str)]
    valid = ", ".join(names) or "no task has a name"
    return [
        Problem(f"spec.checkpoint.tasks[{i}]", f"{format_value(n)} is not a task of the job; valid: {valid}")
        for i, n in enumerate(arr(ckpt.get("tasks")))
        if isinstance(n, str) and n not in names
    ]


def cel_checkpoint_size_above_zero(job: Defaulted) -> list[Problem]:
    """``checkpoint.size`` is above zero (that it is a quantity is the schema's pattern)."""
    size = obj(job.spec.get("checkpoint")).get("size")
    if isinstance(size, str) and _ZERO.match(size):
        why = f"{format_value(size)} is not above zero; valid: a quantity like 512Mi or 10Gi"
        return [Problem("spec.checkpoint.size", why)]
    return []


def checkpoint_problems(job: Defaulted) -> list[Problem]:
    """The checkpoint volume's name and mount path are free: in ``spec.volumes`` and in the pods that mount it."""
    ckpt = job.spec.get("checkpoint")
    if not isinstance(ckpt, Mapping):
        return []
    problems = _checkpoint_name_problems(arr(job.spec.get("volumes")), "spec.volumes")
    mounted = set(checkpoint_tasks(job.spec))
    for i, t in enumerate(t for t in job.tasks if isinstance(t.get("name"), str)):
        if t["name"] in mounted:
            pod = obj(obj(t.get("template")).get("spec"))
            where = f"spec.tasks[{i}].template.spec"
            problems += _checkpoint_name_problems(arr(pod.get("volumes")), f"{where}.volumes")
            problems += _mount_path_problems(pod, where, ckpt.get("mountPath"))
    return problems


def _checkpoint_name_problems(volumes: list[object], where: str) -> list[Problem]:
    why = f"{CHECKPOINT_VOLUME!r} is the checkpoint volume's name (spec.checkpoint); choose another name"
    return [
        Problem(f"{where}[{j}].name", why)
        for j, v in enumerate(volumes)
        if isinstance(v, Mapping) and v.get("name") == CHECKPOINT_VOLUME
    ]


def _mount_path_problems(pod: Mapping[str, object], where: str, path: object) -> list[Problem]:
    why = (
        f"{format_value(path)} is spec.checkpoint.mountPath, where the checkpoint volume is mounted; "
        "choose another path (or another spec.checkpoint.mountPath)"
    )
    return [
        Problem(f"{where}.{kind}[{j}].volumeMounts[{k}].mountPath", why)
        for kind in ("containers", "initContainers")
        for j, c in enumerate(arr(pod.get(kind)))
        if isinstance(c, Mapping)
        for k, mount in enumerate(arr(c.get("volumeMounts")))
        if isinstance(mount, Mapping) and mount.get("mountPath") == path
    ]
