"""Names of everything a DIJob creates, in one place (pure). Label and annotation keys live in
:mod:`dihera.constants`."""

from __future__ import annotations

from enum import Enum

__all__ = [
    "DI_PORT",
    "DI_PORT_NAME",
    "Addressing",
    "dag_task_name",
    "fqdn",
    "hostname",
    "member_address",
    "membership_configmap_name",
    "search_domain",
    "service_name",
    "workflow_name",
]

DI_PORT = 22270
DI_PORT_NAME = "di-port"


def service_name(job: str) -> str:
    """The headless Service that gives every pod its DNS name: ``di-<job>``."""
    return f"di-{job}"


def membership_configmap_name(job: str) -> str:
    """The ConfigMap holding the job's membership (node lists, ranks, generation)."""
    return f"di-{job}"


def workflow_name(job: str) -> str:
    """The Argo Workflow running the job has the job's name."""
    return job


def hostname(job: str, task: str, index: int | str) -> str:
    """A replica's pod hostname (and its ``diengine/pod`` label): ``<job>-<task>-<index>``."""
    return f"{job}-{task}-{index}"


def dag_task_name(task: str, index: int | str) -> str:
    """A replica's node in the Workflow DAG: ``<task>-<index>``."""
    return f"{task}-{index}"


def fqdn(job: str, namespace: str, task: str, index: int | str, cluster_domain: str) -> str:
    """``<job>-<task>-<index>.di-<job>.<namespace>.svc.<cluster domain>``."""
    return f"{hostname(job, task, index)}.{service_name(job)}.{namespace}.svc.{cluster_domain}"


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


def member_address(job: str, namespace: str, task: str, index: int | str, cluster_domain: str, form: Addressing) -> str:
    """A replica's name in the membership lists, in ``form``."""
    host = hostname(job, task, index)
    if form is Addressing.HOSTNAME:
        return host
    if form is Addressing.SERVICE:
        return f"{host}.{service_name(job)}"
    return fqdn(job, namespace, task, index, cluster_domain)
