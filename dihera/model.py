"""The DIJob as typed, immutable Python values (defaults applied, validated)."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, cast

from dihera.schema import API_VERSION, KIND
from dihera.shapes.dijob import (
    ArtifactSpec,
    CheckpointSpec,
    DIJobObject,
    DIJobSpec,
    EnvProviderSpec,
    PodTemplate,
    SuccessPolicySpec,
    TaskSpec,
)
from dihera.shapes.json_types import JsonObject
from dihera.shapes.meta import ObjectMeta

__all__ = [
    "DEFAULT_SCALE_DOWN",
    "DEFAULT_SCALE_UP",
    "Artifact",
    "Autoscaling",
    "Checkpoint",
    "CleanPodPolicy",
    "DIJob",
    "EnvProvider",
    "FailurePolicy",
    "Plateau",
    "Priority",
    "ReclaimPolicy",
    "ScalingPolicy",
    "ScalingRules",
    "SuccessOperator",
    "SuccessPolicy",
    "Task",
    "TaskType",
    "TrainingPolicy",
    "TrainingTarget",
    "task_env_name",
]


class TaskType(StrEnum):
    """Role of a task in DI-engine."""

    LEARNER = "learner"
    COLLECTOR = "collector"
    EVALUATOR = "evaluator"
    NONE = "none"


class CleanPodPolicy(StrEnum):
    """Which pods are deleted when the job ends."""

    RUNNING = "Running"
    ALL = "All"
    NONE = "None"


class SuccessOperator(StrEnum):
    """``spec.successPolicy.operator``: every replica of the target tasks must succeed, or one is enough."""

    ALL = "All"
    ANY = "Any"


@dataclass(frozen=True)
class SuccessPolicy:
    """``spec.successPolicy``: the job Succeeds when all (or any) replicas of ``target_tasks`` succeeded.

    ``target_tasks`` empty means every task of the job.
    """

    operator: SuccessOperator = SuccessOperator.ALL
    target_tasks: tuple[str, ...] = ()

    def to_dict(self) -> SuccessPolicySpec:
        out: SuccessPolicySpec = {"operator": self.operator.value}
        if self.target_tasks:
            out["targetTasks"] = list(self.target_tasks)
        return out


class FailurePolicy(StrEnum):
    """``spec.tasks[].failurePolicy``: what a replica that exhausted its retries does to the job."""

    FAIL_JOB = "FailJob"  # the job is Failed (the default)
    DROP_REPLICA = "DropReplica"  # the replica leaves the membership, as a scale-down removes it


class Priority(StrEnum):
    """``spec.priority``: the Kueue priority class of a queued job (docs/queueing.md); else recorded only."""

    LOW = "low"
    NORMAL = "normal"
    HIGH = "high"


class ReclaimPolicy(StrEnum):
    """``spec.checkpoint.reclaimPolicy``: what becomes of the checkpoint claim when the DIJob is deleted."""

    DELETE = "Delete"  # owned by the DIJob: garbage-collected with it
    RETAIN = "Retain"  # kept; a DIJob of the same name and namespace mounts it again


@dataclass(frozen=True)
class Checkpoint:
    """``spec.checkpoint``: the job's checkpoint volume (docs/checkpoints.md), defaults applied."""

    tasks: tuple[str, ...]
    size: str = "1Gi"
    storage_class_name: str | None = None
    access_mode: str = "ReadWriteOnce"
    mount_path: str = "/var/dihera/checkpoints"
    reclaim_policy: ReclaimPolicy = ReclaimPolicy.DELETE

    def mounted_by(self, task: str) -> bool:
        """Whether the pods of ``task`` mount the volume (and get ``DI_CHECKPOINT_DIR``)."""
        return task in self.tasks

    def to_dict(self) -> CheckpointSpec:
        out: CheckpointSpec = {"size": self.size}
        if self.storage_class_name is not None:
            out["storageClassName"] = self.storage_class_name
        out["accessMode"] = self.access_mode
        out["tasks"] = list(self.tasks)
        out["mountPath"] = self.mount_path
        out["reclaimPolicy"] = self.reclaim_policy.value
        return out


@dataclass(frozen=True)
class Artifact:
    """``spec.artifacts[]``: a file or directory the replicas of ``task`` leave in Argo's artifact repository
    (docs/artifacts.md), its task defaulted."""

    name: str
    path: str
    task: str

    def to_dict(self) -> ArtifactSpec:
        return {"name": self.name, "path": self.path, "task": self.task}


def task_env_name(task_name: str) -> str:
    """``DI_<TASK>_NODES`` for a task name: upper-cased, ``-`` becomes ``_``."""
    return f"DI_{task_name.upper().replace('-', '_')}_NODES"


@dataclass(frozen=True)
class EnvProvider:
    """``spec.tasks[].envProvider``: a framework's environment (torch, tensorflow, mxnet) for a task.

    ``port`` and ``role`` are ``None`` when not given (the provider's default applies, see
    docs/providers.md); ``allow_scaling`` lets the task's replica count change while it runs.
    """

    name: str
    port: int | None = None
    role: str | None = None
    allow_scaling: bool = False

    def to_dict(self) -> EnvProviderSpec:
        out: EnvProviderSpec = {"name": self.name}
        if self.port is not None:
            out["port"] = self.port
        if self.role is not None:
            out["role"] = self.role
        out["allowScaling"] = self.allow_scaling
        return out


@dataclass(frozen=True)
class ScalingPolicy:
    """One of ``autoscaling.behavior.scaleUp/scaleDown.policies``: at most ``value`` collectors (``Pods``) or
    ``value`` percent of the count at the period's start (``Percent``) per ``period_seconds``."""

    type: str
    value: int
    period_seconds: int

    def to_dict(self) -> JsonObject:
        return {"type": self.type, "value": self.value, "periodSeconds": self.period_seconds}


@dataclass(frozen=True)
class ScalingRules:
    """``autoscaling.behavior.scaleUp`` or ``scaleDown`` (HPA's vocabulary), defaults applied."""

    stabilization_window_seconds: int
    policies: tuple[ScalingPolicy, ...]
    select_policy: str = "Max"

    def to_dict(self) -> JsonObject:
        return {
            "stabilizationWindowSeconds": self.stabilization_window_seconds,
            "selectPolicy": self.select_policy,
            "policies": [p.to_dict() for p in self.policies],
        }


#: Collectors join a running job through a membership change: added fast (a starving learner wastes its GPU),
#: removed slowly (a removed collector's samples in flight are lost, and a brief lull must not shrink the job).
DEFAULT_SCALE_UP = ScalingRules(30, (ScalingPolicy("Percent", 100, 30), ScalingPolicy("Pods", 2, 30)))
DEFAULT_SCALE_DOWN = ScalingRules(120, (ScalingPolicy("Pods", 1, 60),))


@dataclass(frozen=True)
class Autoscaling:
    """``spec.tasks[].autoscaling`` of a collector task (docs/autoscaling.md), defaults applied."""

    max_replicas: int
    min_replicas: int = 1
    target_data_wait_fraction: float = 0.2
    #: None: collectors are never removed for a low replay ratio.
    target_replay_ratio: float | None = None
    stale_after_seconds: int = 60
    scale_up: ScalingRules = DEFAULT_SCALE_UP
    scale_down: ScalingRules = DEFAULT_SCALE_DOWN

    def to_dict(self) -> JsonObject:
        out: JsonObject = {
            "minReplicas": self.min_replicas,
            "maxReplicas": self.max_replicas,
            "targetDataWaitFraction": self.target_data_wait_fraction,
        }
        if self.target_replay_ratio is not None:
            out["targetReplayRatio"] = self.target_replay_ratio
        out["staleAfterSeconds"] = self.stale_after_seconds
        out["behavior"] = {"scaleUp": self.scale_up.to_dict(), "scaleDown": self.scale_down.to_dict()}
        return out


@dataclass(frozen=True)
class TrainingTarget:
    """``trainingPolicy.target``: the job Succeeds once ``metric`` >= ``value``."""

    metric: str
    value: float

    def to_dict(self) -> JsonObject:
        return {"metric": self.metric, "value": self.value}


@dataclass(frozen=True)
class Plateau:
    """``trainingPolicy.plateau``: the job Succeeds when the best evaluation return has not improved by more
    than ``min_delta`` over the last ``evaluations`` evaluations."""

    evaluations: int
    min_delta: float = 0.0

    def to_dict(self) -> JsonObject:
        return {"evaluations": self.evaluations, "minDelta": self.min_delta}


@dataclass(frozen=True)
class TrainingPolicy:
    """``spec.trainingPolicy``: when the training's figures end the job (docs/autoscaling.md)."""

    target: TrainingTarget | None = None
    plateau: Plateau | None = None
    fail_on_non_finite: bool = True

    def to_dict(self) -> JsonObject:
        out: JsonObject = {}
        if self.target is not None:
            out["target"] = self.target.to_dict()
        if self.plateau is not None:
            out["plateau"] = self.plateau.to_dict()
        out["failOnNonFinite"] = self.fail_on_non_finite
        return out


@dataclass(frozen=True)
class Task:
    """One DI-engine component: a role, a pod template and a replica count."""

    name: str
    type: TaskType
    replicas: int
    template: Mapping[str, Any]
    env_provider: EnvProvider | None = None
    failure_policy: FailurePolicy = FailurePolicy.FAIL_JOB
    #: ``autoscaling`` (collector tasks only): None, the count changes only when asked.
    autoscaling: Autoscaling | None = None

    def to_dict(self) -> TaskSpec:
        out: TaskSpec = {
            "name": self.name,
            "type": self.type.value,
            "replicas": self.replicas,
            "template": cast(PodTemplate, copy.deepcopy(dict(self.template))),
        }
        if self.failure_policy is not FailurePolicy.FAIL_JOB:
            out["failurePolicy"] = self.failure_policy.value
        if self.env_provider is not None:
            out["envProvider"] = self.env_provider.to_dict()
        if self.autoscaling is not None:
            out["autoscaling"] = self.autoscaling.to_dict()
        return out


@dataclass(frozen=True)
class DIJob:
    """A validated DIJob with every default applied. Build one with :func:`dihera.load_job`."""

    name: str
    namespace: str
    tasks: tuple[Task, ...]
    priority: Priority = Priority.NORMAL
    clean_pod_policy: CleanPodPolicy = CleanPodPolicy.RUNNING
    preemptible: bool = False
    backoff_limit: int = 3
    group: str | None = None
    min_replicas: int | None = None
    max_replicas: int | None = None
    volumes: tuple[Mapping[str, object], ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    uid: str | None = None
    #: None: the job Succeeds when every replica succeeded.
    success_policy: SuccessPolicy | None = None
    active_deadline_seconds: int | None = None
    ttl_seconds_after_finished: int | None = None
    #: ``spec.suspend``: no replica runs while True (docs/controller.md, "Suspend and resume").
    suspend: bool = False
    #: ``spec.checkpoint``: None, no checkpoint volume.
    checkpoint: Checkpoint | None = None
    #: ``spec.artifacts``: what the replicas leave in Argo's artifact repository.
    artifacts: tuple[Artifact, ...] = ()
    #: ``spec.trainingPolicy``: None, the job's figures never end it.
    training_policy: TrainingPolicy | None = None

    @property
    def id(self) -> str:
        """``<namespace>/<name>``, the value of ``DI_JOB_ID``."""
        return f"{self.namespace}/{self.name}"

    @property
    def drop_tasks(self) -> frozenset[str]:
        """Names of the tasks whose ``failurePolicy`` is DropReplica."""
        return frozenset(t.name for t in self.tasks if t.failure_policy is FailurePolicy.DROP_REPLICA)

    @property
    def total_replicas(self) -> int:
        return sum(t.replicas for t in self.tasks)

    def task(self, name: str) -> Task:
        for t in self.tasks:
            if t.name == name:
                return t
        raise KeyError(f"job {self.id} has no task {name!r} (tasks: {', '.join(t.name for t in self.tasks)})")

    def with_replicas(self, task_name: str, replicas: int) -> DIJob:
        """The same job with one task's replica count changed."""
        self.task(task_name)
        tasks = tuple(dataclasses.replace(t, replicas=replicas) if t.name == task_name else t for t in self.tasks)
        return DIJob(**{**self.__dict__, "tasks": tasks})

    def _optional_spec(self) -> DIJobSpec:
        """The spec fields written only when set: replica bounds, volumes, checkpoint, artifacts."""
        out: DIJobSpec = {}
        if self.min_replicas is not None:
            out["minReplicas"] = self.min_replicas
        if self.max_replicas is not None:
            out["maxReplicas"] = self.max_replicas
        if self.volumes:
            out["volumes"] = [cast(JsonObject, copy.deepcopy(dict(v))) for v in self.volumes]
        if self.checkpoint is not None:
            out["checkpoint"] = self.checkpoint.to_dict()
        if self.artifacts:
            out["artifacts"] = [a.to_dict() for a in self.artifacts]
        if self.training_policy is not None:
            out["trainingPolicy"] = self.training_policy.to_dict()
        return out

    def to_manifest(self) -> DIJobObject:
        """The DIJob object (defaults written out), ready to create through the Kubernetes API."""
        metadata: ObjectMeta = {"name": self.name, "namespace": self.namespace}
        if self.labels:
            metadata["labels"] = dict(self.labels)
        if self.annotations:
            metadata["annotations"] = dict(self.annotations)
        spec: DIJobSpec = {
            "priority": self.priority.value,
            "cleanPodPolicy": self.clean_pod_policy.value,
            "preemptible": self.preemptible,
            "backoffLimit": self.backoff_limit,
        }
        if self.success_policy is not None:
            spec["successPolicy"] = self.success_policy.to_dict()
        if self.active_deadline_seconds is not None:
            spec["activeDeadlineSeconds"] = self.active_deadline_seconds
        if self.ttl_seconds_after_finished is not None:
            spec["ttlSecondsAfterFinished"] = self.ttl_seconds_after_finished
        if self.suspend:
            spec["suspend"] = True
        if self.group is not None:
            spec["group"] = self.group
        spec.update(self._optional_spec())
        spec["tasks"] = [t.to_dict() for t in self.tasks]
        return {"apiVersion": API_VERSION, "kind": KIND, "metadata": metadata, "spec": spec}
