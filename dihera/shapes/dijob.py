"""The raw DIJob (``dihera.io/v2alpha1``) as the API server sends it and as dihera writes it: its spec with
the tasks, its status with the conditions, replicas, progress, outputs and profilings.

Declared once from the CRD's schema (``dihera/schema/dijob.v2alpha1.json``); the controller's decisions,
the renderer's input and the status the controller computes (:func:`~dihera.controller.decide.status.
compute_status`) are these types, so a field read under a wrong name is a type error. Every field the
schema does not require is optional (``total=False``): a new field is one line here. A task's pod template
is core/v1 (too large to declare): its ``metadata`` and ``spec`` stay free JSON (:data:`JsonObject`).
``status.training``'s shape is :class:`dihera.shapes.training.TrainingStatus`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypedDict, cast

from dihera.shapes.json_types import JsonObject
from dihera.shapes.meta import ObjectMeta
from dihera.shapes.training import TrainingStatus

__all__ = [
    "ArtifactOutput",
    "ArtifactSpec",
    "CheckpointSpec",
    "Condition",
    "DIJobObject",
    "DIJobSpec",
    "DIJobStatus",
    "DroppedReplica",
    "EnvProviderSpec",
    "PodTemplate",
    "StuckReplica",
    "SuccessPolicySpec",
    "TaskSpec",
    "as_dijob",
    "as_status",
]


class PodTemplate(TypedDict, total=False):
    """``spec.tasks[].template``: a core/v1 PodTemplateSpec, kept whole (its inside is free JSON)."""

    metadata: JsonObject
    spec: JsonObject


class EnvProviderSpec(TypedDict, total=False):
    """``spec.tasks[].envProvider``."""

    name: str
    port: int
    role: str
    allowScaling: bool


class TaskSpec(TypedDict, total=False):
    """``spec.tasks[]``: one DI-engine component."""

    name: str
    type: str
    replicas: int
    failurePolicy: str
    envProvider: EnvProviderSpec
    #: a collector task's autoscaling (docs/autoscaling.md; read through :class:`dihera.model.Autoscaling`)
    autoscaling: JsonObject
    template: PodTemplate


class SuccessPolicySpec(TypedDict, total=False):
    """``spec.successPolicy``."""

    operator: str
    targetTasks: list[str]


class CheckpointSpec(TypedDict, total=False):
    """``spec.checkpoint``."""

    size: str
    storageClassName: str
    accessMode: str
    tasks: list[str]
    mountPath: str
    reclaimPolicy: str


class ArtifactSpec(TypedDict, total=False):
    """``spec.artifacts[]``."""

    name: str
    path: str
    task: str


class DIJobSpec(TypedDict, total=False):
    """``spec``."""

    group: str
    priority: str
    cleanPodPolicy: str
    preemptible: bool
    backoffLimit: int
    successPolicy: SuccessPolicySpec
    activeDeadlineSeconds: int
    ttlSecondsAfterFinished: int
    suspend: bool
    minReplicas: int
    maxReplicas: int
    #: core/v1 Volumes, free JSON
    volumes: list[JsonObject]
    checkpoint: CheckpointSpec
    artifacts: list[ArtifactSpec]
    #: metric policies (docs/autoscaling.md; read through :class:`dihera.model.TrainingPolicy`)
    trainingPolicy: JsonObject
    tasks: list[TaskSpec]


class Condition(TypedDict, total=False):
    """``status.conditions[]``: one per phase the job went through; the current phase's is ``True``."""

    type: str
    #: "True", "False" or "Unknown"
    status: str
    reason: str
    message: str
    lastUpdateTime: str
    lastTransitionTime: str


class StuckReplica(TypedDict, total=False):
    """``status.stuckReplicas[]``: a replica whose current pod is stuck, and why."""

    replica: str
    pod: str
    reason: str
    message: str


class DroppedReplica(TypedDict, total=False):
    """``status.droppedReplicas[]``: a replica a failurePolicy DropReplica took out of the job."""

    replica: str
    rank: int
    restarts: int
    generation: int
    message: str
    time: str


class ArtifactOutput(TypedDict, total=False):
    """``status.artifacts[]``: what a replica stored of ``spec.artifacts``, and the Argo node it is under."""

    name: str
    replica: str
    node: str
    key: str


class DIJobStatus(TypedDict, total=False):
    """``status``. The controller owns every field but ``profilings`` and ``training`` (the di-server's)."""

    phase: str
    conditions: list[Condition]
    replicas: int
    readyReplicas: int
    #: task → pod phase → count
    taskStatus: dict[str, dict[str, int]]
    restarts: int
    reschedules: int
    #: the replicas' reports, free JSON (reserved)
    profilings: JsonObject
    completionTimestamp: str
    startTime: str
    observedGeneration: int
    membershipGeneration: int
    workflowName: str
    stuckReplicas: list[StuckReplica]
    droppedReplicas: list[DroppedReplica]
    progress: str
    #: task → ``N/M``
    taskProgress: dict[str, str]
    artifacts: list[ArtifactOutput]
    training: TrainingStatus


class DIJobObject(TypedDict, total=False):
    """A whole DIJob object (the API server always sends ``metadata``; a manifest may lack ``status``)."""

    apiVersion: str
    kind: str
    metadata: ObjectMeta
    spec: DIJobSpec
    status: DIJobStatus


def as_dijob(obj: Mapping[str, object]) -> DIJobObject:
    """``obj``, a DIJob as raw JSON (the API server's, or a manifest), as the typed view; no copy.

    The one place the shape is asserted rather than checked: the API server checked the object against the
    CRD's schema (the same one these types are declared from), and a manifest from a file is checked by
    :mod:`dihera.validation` before its fields are read.
    """
    return cast(DIJobObject, obj)


def as_status(status: Mapping[str, object]) -> DIJobStatus:
    """A DIJob's ``status`` as raw JSON as the typed view (see :func:`as_dijob`); no copy."""
    return cast(DIJobStatus, status)
