"""A Kueue Workload as the watch cache keeps it: its podSets' names and counts, its queue and priority, and
its conditions, admission and reclaimable pods (read whole by :mod:`dihera.queueing`, so opaque here)."""

from __future__ import annotations

from typing import TypedDict

from dihera.shapes.meta import ObjectMeta

__all__ = ["PodSet", "Workload", "WorkloadSpec", "WorkloadStatus"]


class PodSet(TypedDict, total=False):
    name: str
    count: int


class WorkloadSpec(TypedDict, total=False):
    queueName: str
    priority: int
    podSets: list[PodSet]


class WorkloadStatus(TypedDict, total=False):
    conditions: list[object]
    admission: object
    reclaimablePods: list[object]


class Workload(TypedDict, total=False):
    metadata: ObjectMeta
    spec: WorkloadSpec
    status: WorkloadStatus
