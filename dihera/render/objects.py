"""The plain Kubernetes objects of a job: the headless Service and the membership ConfigMap (pure).

Each is typed as it is written (``ServiceObject``, ``ConfigMapObject``, ``ClaimObject``): the views of
:mod:`dihera.shapes` its fields share, plus ``apiVersion`` and ``kind``."""

from __future__ import annotations

from typing import TypedDict

from dihera.constants import LABEL_JOB, MANAGED_BY
from dihera.membership import Membership
from dihera.model import DIJob, ReclaimPolicy
from dihera.naming import DI_PORT, DI_PORT_NAME, checkpoint_claim_name, membership_configmap_name, service_name
from dihera.objects import owner_reference
from dihera.render.env import GENERATION_KEY, MEMBERSHIP_FILE, membership_lists
from dihera.render.settings import RenderSettings
from dihera.schema import API_VERSION, KIND
from dihera.shapes.meta import ObjectMeta, OwnerReference
from dihera.shapes.service import ServiceSpec

__all__ = [
    "ClaimObject",
    "ClaimSpec",
    "ConfigMapObject",
    "ServiceObject",
    "checkpoint_claim",
    "job_labels",
    "membership_configmap",
    "owner_references",
    "service",
]


class ServiceObject(TypedDict):
    apiVersion: str
    kind: str
    metadata: ObjectMeta
    spec: ServiceSpec


class ConfigMapObject(TypedDict):
    apiVersion: str
    kind: str
    metadata: ObjectMeta
    data: dict[str, str]


class ClaimResources(TypedDict):
    requests: dict[str, str]


class ClaimSpec(TypedDict, total=False):
    accessModes: list[str]
    resources: ClaimResources
    storageClassName: str


class ClaimObject(TypedDict):
    """The checkpoint volume's PersistentVolumeClaim."""

    apiVersion: str
    kind: str
    metadata: ObjectMeta
    spec: ClaimSpec


def job_labels(job: DIJob) -> dict[str, str]:
    """Labels on every object of the job."""
    return {**MANAGED_BY, LABEL_JOB: job.name}


def owner_references(job: DIJob) -> list[OwnerReference]:
    """The DIJob owns its objects (garbage-collected with it) once it has a uid."""
    return [owner_reference(API_VERSION, KIND, job.name, job.uid)] if job.uid else []


def _metadata(job: DIJob, name: str) -> ObjectMeta:
    meta: ObjectMeta = {"name": name, "namespace": job.namespace, "labels": job_labels(job)}
    if owners := owner_references(job):
        meta["ownerReferences"] = owners
    return meta


def service(job: DIJob) -> ServiceObject:
    """Headless Service ``di-<job>``: gives each pod the DNS name ``<hostname>.di-<job>``.

    Not-ready addresses are published so replicas can find each other while they start.
    """
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _metadata(job, service_name(job.name)),
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": {LABEL_JOB: job.name},
            "ports": [{"name": DI_PORT_NAME, "port": DI_PORT, "targetPort": DI_PORT, "protocol": "TCP"}],
        },
    }


def membership_configmap(job: DIJob, membership: Membership, settings: RenderSettings) -> ConfigMapObject:
    """ConfigMap ``di-<job>``: node lists for the env, and ``membership.json`` for pods that watch it."""
    _, data = membership_lists(job, membership, settings)
    data[GENERATION_KEY] = str(membership.generation)
    data[MEMBERSHIP_FILE] = membership.to_json()
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _metadata(job, membership_configmap_name(job.name)),
        "data": data,
    }


def checkpoint_claim(job: DIJob) -> ClaimObject | None:
    """PersistentVolumeClaim ``di-<job>-checkpoints`` (``spec.checkpoint``, :mod:`dihera.render.checkpoint`), or None
    without it. Owned by the DIJob with reclaimPolicy Delete; by nothing with Retain (it outlives the DIJob)."""
    ckpt = job.checkpoint
    if ckpt is None:
        return None
    meta: ObjectMeta = {
        "name": checkpoint_claim_name(job.name),
        "namespace": job.namespace,
        "labels": job_labels(job),
    }
    if ckpt.reclaim_policy is ReclaimPolicy.DELETE and (owners := owner_references(job)):
        meta["ownerReferences"] = owners
    spec: ClaimSpec = {"accessModes": [ckpt.access_mode], "resources": {"requests": {"storage": ckpt.size}}}
    if ckpt.storage_class_name is not None:
        spec["storageClassName"] = ckpt.storage_class_name
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec}
