"""The Kueue Workload (``kueue.x-k8s.io/v1beta1``) as dihera writes and reads it: the podSets asked for, and
the conditions, admission and reclaimable pods of Kueue's answer.

Only the fields :mod:`dihera.queueing` builds or reads are declared (``total=False``: a field Kueue adds
later is one line here). A podSet's pod template stays free JSON inside (:data:`~dihera.shapes.json_types.
JsonObject`), as a DIJob task's does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypedDict, cast

from dihera.shapes.json_types import JsonObject
from dihera.shapes.meta import ObjectMeta

__all__ = [
    "CachedPodSet",
    "CachedWorkloadSpec",
    "CachedWorkloadStatus",
    "PodSet",
    "PodSetAssignment",
    "PodSetTemplate",
    "PriorityClassRef",
    "ReclaimablePod",
    "Workload",
    "WorkloadAdmission",
    "WorkloadCondition",
    "WorkloadObject",
    "WorkloadSpec",
    "WorkloadStatus",
    "as_workload",
]


class PodSetTemplate(TypedDict, total=False):
    """A podSet's pod template (Kueue allows only labels and annotations in its metadata)."""

    metadata: ObjectMeta
    spec: JsonObject


class PodSet(TypedDict, total=False):
    """``spec.podSets[]``: one per task, named as the task."""

    name: str
    count: int
    template: PodSetTemplate


class PriorityClassRef(TypedDict, total=False):
    group: str
    kind: str
    name: str


class WorkloadSpec(TypedDict, total=False):
    queueName: str
    priorityClassRef: PriorityClassRef
    priority: int
    podSets: list[PodSet]


class WorkloadCondition(TypedDict, total=False):
    """``status.conditions[]``: QuotaReserved, Admitted, Evicted, Finished, Requeued."""

    type: str
    status: str
    reason: str
    message: str
    lastTransitionTime: str
    observedGeneration: int


class PodSetAssignment(TypedDict, total=False):
    """``status.admission.podSetAssignments[]``: the ResourceFlavor of each resource, per podSet."""

    name: str
    #: resource → flavor
    flavors: dict[str, str]
    count: int


class WorkloadAdmission(TypedDict, total=False):
    clusterQueue: str
    podSetAssignments: list[PodSetAssignment]


class ReclaimablePod(TypedDict, total=False):
    """``status.reclaimablePods[]``: replicas of a podSet whose quota the job side gave back."""

    name: str
    count: int


class WorkloadStatus(TypedDict, total=False):
    conditions: list[WorkloadCondition]
    admission: WorkloadAdmission
    reclaimablePods: list[ReclaimablePod]


class WorkloadObject(TypedDict, total=False):
    apiVersion: str
    kind: str
    metadata: ObjectMeta
    spec: WorkloadSpec
    status: WorkloadStatus


def as_workload(obj: Mapping[str, object]) -> WorkloadObject:
    """``obj``, a Workload as raw JSON (the API server's: checked against Kueue's CRD), as the typed view;
    no copy. The one place the shape is asserted rather than checked."""
    return cast(WorkloadObject, obj)


class CachedPodSet(TypedDict, total=False):
    name: str
    count: int


class CachedWorkloadSpec(TypedDict, total=False):
    queueName: str
    priority: int
    podSets: list[CachedPodSet]


class CachedWorkloadStatus(TypedDict, total=False):
    conditions: list[object]
    admission: object
    reclaimablePods: list[object]


class Workload(TypedDict, total=False):
    """What the watch cache keeps of a Workload (:mod:`dihera.kube.watch.slim` walks it): its podSets' names
    and counts, its queue and priority, and its conditions, admission and reclaimable pods whole (read by
    :mod:`dihera.queueing` through :class:`WorkloadObject`); no pod templates."""

    metadata: ObjectMeta
    spec: CachedWorkloadSpec
    status: CachedWorkloadStatus
