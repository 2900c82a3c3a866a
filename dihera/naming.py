"""Names of everything a DIJob creates, in one place (pure). Label and annotation keys live in
:mod:`dihera.constants`."""

from __future__ import annotations

from enum import Enum

__all__ = [
    "DI_PORT",
    "DI_PORT_NAME",
    "SHORT_TEMPLATE_SUFFIX",
    "Addressing",
    "checkpoint_claim_name",
    "dag_task_name",
    "fqdn",
    "hostname",
    "member_address",
    "membership_configmap_name",
    "replica_hostname",
    "search_domain",
    "service_name",
    "short_hostname",
    "short_template_name",
    "workflow_name",
]

DI_PORT = 22270
DI_PORT_NAME = "di-port"


def service_name(job: str) -> str:
    """The headless Service that gives every pod its DNS name: ``di-<job>``."""
    return f"di-{job}"


def checkpoint_claim_name(job: str) -> str:
    """The PersistentVolumeClaim of the job's checkpoints (``spec.checkpoint``): ``di-<job>-checkpoints``."""
    return f"di-{job}-checkpoints"


def membership_configmap_name(job: str) -> str:
    """The ConfigMap holding the job's membership (node lists, ranks, generation)."""
    return f"di-{job}"


def workflow_name(job: str) -> str:
    """The Argo Workflow running the job has the job's name."""
    return job


def hostname(job: str, task: str, index: int | str) -> str:
    """A replica's pod hostname (and its ``diengine/pod`` label): ``<job>-<task>-<index>``."""
    return f"{job}-{task}-{index}"


def short_hostname(task: str, index: int | str) -> str:
    """A short-hostname replica's pod hostname: ``<task>-<index>`` (its DAG task name).

    Given to the replicas that join a membership whose bare long hostnames would not fit in one
    environment string (docs/rendering.md, "Names in the node lists"), for their whole life. It
    never names another pod of the job's subdomain: no long hostname ``<job>-<t>-<i>`` (validation
    refuses a task named ``<job>-<another task>``) and no other short one (a DAG task name is never
    used twice in a Workflow).
    """
    return f"{task}-{index}"


def replica_hostname(job: str, task: str, index: int | str, short: bool = False) -> str:
    """A replica's actual pod hostname: :func:`short_hostname` if ``short``, else :func:`hostname`."""
    return short_hostname(task, index) if short else hostname(job, task, index)


#: The Workflow template of a task's short-hostname replicas is ``<task>`` + this (lowercase: Argo puts
#: the template's name in the pod's name). Validation refuses a task named ``<another task>-short``.
SHORT_TEMPLATE_SUFFIX = "-short"


def short_template_name(task: str) -> str:
    """The template of ``task``'s short-hostname replicas."""
    return f"{task}{SHORT_TEMPLATE_SUFFIX}"


def dag_task_name(task: str, index: int | str) -> str:
    """A replica's node in the Workflow DAG: ``<task>-<index>``."""
    return f"{task}-{index}"


def fqdn(job: str, namespace: str, task: str, index: int | str, cluster_domain: str, short: bool = False) -> str:
    """``<job>-<task>-<index>.di-<job>.<namespace>.svc.<cluster domain>`` (``<task>-<index>.di-<job>...``
    for a short-hostname replica)."""
    return f"{replica_hostname(job, task, index, short)}.{service_name(job)}.{namespace}.svc.{cluster_domain}"


def search_domain(job: str, namespace: str, cluster_domain: str) -> str:
    """The DNS search domain dihera adds to every replica's pod: ``di-<job>.<namespace>.svc.<domain>``.

    Through it a replica's bare hostname resolves to its FQDN (:attr:`Addressing.HOSTNAME`).
    """
    return f"{service_name(job)}.{namespace}.svc.{cluster_domain}"


class Addressing(Enum):
    """How a replica is written in the membership lists (``DI_NODES``, ``DI_<TASK>_NODES``, TF's cluster).

    Longest first. Every form resolves, in a replica's pod, to the same address:
    ``FQDN`` as is; ``SERVICE`` (``<hostname>.di-<job>``) through the first search domain every
    Kubernetes pod has (``<namespace>.svc.<domain>``); ``HOSTNAME`` through :func:`search_domain`.
    The membership ConfigMap uses the longest form whose values all fit in one environment string
    (docs/rendering.md, "Names in the node lists").
    """

    FQDN = "fqdn"
    SERVICE = "service"
    HOSTNAME = "hostname"


def member_address(
    job: str,
    namespace: str,
    task: str,
    index: int | str,
    cluster_domain: str,
    form: Addressing,
    short: bool = False,
) -> str:
    """A replica's name in the membership lists, in ``form`` (``short``: it has a short hostname)."""
    host = replica_hostname(job, task, index, short)
    if form is Addressing.HOSTNAME:
        return host
    if form is Addressing.SERVICE:
        return f"{host}.{service_name(job)}"
    return fqdn(job, namespace, task, index, cluster_domain, short)
