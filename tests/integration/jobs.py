"""DIJobs on the local control plane's kwok nodes, run by a test's controller: manifests, reads and hand edits.

A task's pods run ``sim.dihera.io/run-seconds`` seconds on a kwok node (2 unless the task says otherwise)
and end as the other ``sim.dihera.io/*`` annotations say (README.md: exit code, failed attempts, waiting).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubernetes import client

from dihera.kube.jobs import JobStore
from dihera.kube.objects import ObjectStore
from dihera.schema import GROUP, PLURAL, VERSION
from tests.builders import DIJobBuilder, TaskBuilder

__all__ = ["dijob_events", "edit_replicas", "job_pods", "manifest", "phase_is", "task"]


def manifest(name: str, namespace: str, *tasks: dict[str, Any], **spec: Any) -> dict[str, Any]:
    """DIJob ``namespace/name`` with ``tasks`` and the spec fields ``spec``."""
    return DIJobBuilder(name).namespace(namespace).task(*tasks).spec(**spec).obj()


def task(type_: str, replicas: int = 1, name: str | None = None, **annotations: str) -> dict[str, Any]:
    """``replicas`` pods of ``type_`` running ``ditask`` for 2 s on kwok, unless ``annotations`` say otherwise."""
    built = TaskBuilder(type_).replicas(replicas).command("ditask")
    built.annotations({"sim.dihera.io/run-seconds": "2", **annotations})
    if name:
        built.name(name)
    return built.obj()


def phase_is(jobs: JobStore, namespace: str, name: str, phase: str) -> Callable[[], dict[str, Any] | None]:
    def check() -> dict[str, Any] | None:
        status = ((jobs.get(namespace, name) or {}).get("status")) or {}
        return status if status.get("phase") == phase else None

    return check


def job_pods(cluster: client.ApiClient, namespace: str, name: str) -> list[dict[str, Any]]:
    return ObjectStore(cluster).list_pods(namespace, f"diengine/job={name}")


def dijob_events(cluster: client.ApiClient, namespace: str, name: str) -> list[tuple[str, str]]:
    evs = client.CoreV1Api(cluster).list_namespaced_event(namespace, field_selector=f"involvedObject.name={name}")
    return [(e.reason, e.message) for e in evs.items if e.involved_object.kind == "DIJob"]


def edit_replicas(api: client.ApiClient, namespace: str, name: str = "elastic", **replicas: int) -> None:
    """Change ``spec.tasks[].replicas`` as ``kubectl edit`` does: a merge patch of the whole tasks list."""
    custom = client.CustomObjectsApi(api)
    body = custom.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)
    tasks = body["spec"]["tasks"]
    for t in tasks:
        t["replicas"] = replicas.get(t.get("name") or t["type"], t["replicas"])
    merge = "application/merge-patch+json"
    custom.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, name, {"spec": {"tasks": tasks}}, _content_type=merge
    )
