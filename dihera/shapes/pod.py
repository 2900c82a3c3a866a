"""A pod as dihera reads it (``core/v1 Pod``): the phase, conditions and container states a decision reads,
and of the spec each container's name and memory limit (an OOM message names it). The watch cache keeps
exactly these fields (:mod:`dihera.kube.watch.slim`), so reading one not declared here is a type error."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypedDict, cast

from dihera.shapes.meta import ObjectMeta

__all__ = [
    "Container",
    "ContainerState",
    "ContainerStateRunning",
    "ContainerStateTerminated",
    "ContainerStateWaiting",
    "ContainerStatus",
    "Pod",
    "PodCondition",
    "PodSpec",
    "PodStatus",
    "ResourceLimits",
    "ResourceRequirements",
    "as_pod",
]


class ResourceLimits(TypedDict, total=False):
    memory: str


class ResourceRequirements(TypedDict, total=False):
    limits: ResourceLimits


class Container(TypedDict, total=False):
    name: str
    resources: ResourceRequirements


class PodSpec(TypedDict, total=False):
    initContainers: list[Container]
    containers: list[Container]


class PodCondition(TypedDict, total=False):
    type: str
    status: str
    reason: str
    message: str


class ContainerStateWaiting(TypedDict, total=False):
    reason: str
    message: str


class ContainerStateRunning(TypedDict, total=False):
    startedAt: str


class ContainerStateTerminated(TypedDict, total=False):
    exitCode: int
    signal: int
    reason: str
    message: str
    startedAt: str
    finishedAt: str


class ContainerState(TypedDict, total=False):
    waiting: ContainerStateWaiting
    running: ContainerStateRunning
    terminated: ContainerStateTerminated


class ContainerStatus(TypedDict, total=False):
    name: str
    state: ContainerState
    lastState: ContainerState
    ready: bool


class PodStatus(TypedDict, total=False):
    phase: str
    reason: str
    message: str
    conditions: list[PodCondition]
    initContainerStatuses: list[ContainerStatus]
    containerStatuses: list[ContainerStatus]


class Pod(TypedDict, total=False):
    metadata: ObjectMeta
    spec: PodSpec
    status: PodStatus


def as_pod(raw: Mapping[str, object]) -> Pod:
    """A Pod as the API server or the watch cache served it, read through its typed view (the one place a raw
    dict becomes one: a full object holds more than the view declares; the declared keys read the same)."""
    return cast(Pod, raw)
