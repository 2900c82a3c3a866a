"""The plain Kubernetes objects of a job: the headless Service and the membership ConfigMap (pure)."""

from __future__ import annotations

from typing import Any

from dihera.constants import LABEL_JOB, MANAGED_BY, VACANT_RANK_ADDRESS
from dihera.env_limits import value_fits
from dihera.membership import Membership, Replica
from dihera.model import DIJob, task_env_name
from dihera.naming import DI_PORT, DI_PORT_NAME, Addressing, member_address, membership_configmap_name, service_name
from dihera.objects import owner_reference
from dihera.render.env import GENERATION_KEY, MEMBERSHIP_FILE, NODES_KEY
from dihera.render.providers import membership_data
from dihera.render.settings import RenderSettings
from dihera.schema import API_VERSION, KIND

__all__ = ["job_labels", "membership_configmap", "membership_lists", "node_lists", "owner_references", "service"]


def job_labels(job: DIJob) -> dict[str, str]:
    """Labels on every object of the job."""
    return {**MANAGED_BY, LABEL_JOB: job.name}


def owner_references(job: DIJob) -> list[dict[str, Any]]:
    """The DIJob owns its objects (garbage-collected with it) once it has a uid."""
    return [owner_reference(API_VERSION, KIND, job.name, job.uid)] if job.uid else []


def _metadata(job: DIJob, name: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": job.namespace, "labels": job_labels(job)}
    if owners := owner_references(job):
        meta["ownerReferences"] = owners
    return meta


def service(job: DIJob) -> dict[str, Any]:
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


def node_lists(
    job: DIJob, membership: Membership, settings: RenderSettings, form: Addressing = Addressing.FQDN
) -> dict[str, str]:
    """``DI_NODES`` and every ``DI_<TASK>_NODES``, comma-joined replica names in ``form``, in rank order.

    In ``DI_NODES`` the entry at position r is rank r's name, so ``DI_NODES[DI_RANK]`` is the pod's
    own address; a rank left vacant by a scale-down holds :data:`VACANT_RANK_ADDRESS` (an address
    that refuses DI-engine's dial instead of breaking it) until a new replica takes it.
    """

    def address(r: Replica) -> str:
        return member_address(job.name, job.namespace, r.task, r.index, settings.cluster_domain, form, r.short)

    top = max((r.rank for r in membership.replicas), default=-1)
    by_rank = [VACANT_RANK_ADDRESS] * (top + 1)
    for r in membership.replicas:
        by_rank[r.rank] = address(r)
    lists = {NODES_KEY: ",".join(by_rank)}
    for task in job.tasks:
        lists[task_env_name(task.name)] = ",".join(address(r) for r in membership.of_task(task.name))
    return lists


def membership_lists(job: DIJob, membership: Membership, settings: RenderSettings) -> tuple[Addressing, dict[str, str]]:
    """The node lists and the env providers' keys, in the longest :class:`Addressing` form whose every
    value still becomes an environment string Linux execs (:func:`~dihera.env_limits.value_fits`).

    FQDNs (DI-orchestrator's form) while they fit; a job too large for them gets shorter names
    that resolve to the same pods. Validation refuses a job for which even bare hostnames would
    not fit (:func:`~dihera.env_limits.membership_env_bound`), so the last form always does.
    """
    forms = list(Addressing)
    for form in forms:
        data = node_lists(job, membership, settings, form)
        data.update(membership_data(job, membership, settings, form))  # env providers' keys (WORLD_SIZE, TF_CLUSTER...)
        if all(value_fits(v) for v in data.values()):
            break
    return form, data


def membership_configmap(job: DIJob, membership: Membership, settings: RenderSettings) -> dict[str, Any]:
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
