"""Names of everything a DIJob creates, in one place (pure). Label and annotation keys live in
:mod:`dihera.constants`."""

from __future__ import annotations

__all__ = [
    "DI_PORT",
    "DI_PORT_NAME",
    "dag_task_name",
    "fqdn",
    "hostname",
    "membership_configmap_name",
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
