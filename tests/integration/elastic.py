"""The job ``elastic`` of the hand-edit scaling tests: its live pods by hostname, and when it has settled.

Shared by test_controller_scaling.py and test_controller_short_hostnames.py.
"""

from __future__ import annotations

from typing import Any

from kubernetes import client

from dihera.kube.jobs import JobStore
from tests.integration.jobs import job_pods

__all__ = ["NAME", "container_env", "live_pods", "settled", "status_of"]

NAME = "elastic"


def live_pods(api: client.ApiClient, namespace: str, name: str = NAME) -> dict[str, dict[str, Any]]:
    """The job's pods not being deleted, by hostname."""
    pods = job_pods(api, namespace, name)
    return {p["metadata"]["labels"]["diengine/pod"]: p for p in pods if not p["metadata"].get("deletionTimestamp")}


def status_of(jobs: JobStore, namespace: str) -> dict[str, Any]:
    return dict(((jobs.get(namespace, NAME) or {}).get("status")) or {})


def settled(
    api: client.ApiClient, jobs: JobStore, namespace: str, hosts: set[str], replicas: int, reschedules: int
) -> tuple[dict[str, dict[str, Any]], dict[str, Any]] | None:
    """Exactly ``hosts`` live and Running, and the status saying so (phase Running)."""
    pods = live_pods(api, namespace)
    if set(pods) != hosts or any(p["status"]["phase"] != "Running" for p in pods.values()):
        return None
    status = status_of(jobs, namespace)
    ok = (status.get("phase"), status.get("replicas"), status.get("reschedules")) == ("Running", replicas, reschedules)
    return (pods, status) if ok else None


def container_env(pod: dict[str, Any], configmap: dict[str, str]) -> dict[str, str]:
    """The main container's env, ConfigMap references resolved as the kubelet does."""
    main = next(c for c in pod["spec"]["containers"] if c["name"] == "main")
    return {e["name"]: e.get("value") or configmap[e["valueFrom"]["configMapKeyRef"]["key"]] for e in main["env"]}
