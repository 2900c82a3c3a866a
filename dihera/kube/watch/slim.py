"""The fields of each watched object the controller reads (pure): what its watch cache keeps.

A pod or a Workflow as the API serves it is mostly what the controller never looks at
(``managedFields``, every container's spec, Argo's per-node inputs and outputs); the cache keeps a
copy with only what :mod:`dihera.controller.decide`, the di-server's views,
:mod:`dihera.scaling.spec_edit` and :mod:`dihera.scaling.retired_pods` read, so 500 jobs cost little
memory. A field read by new decision code must be added here (``tests/unit/test_kube_watch_slim.py``
compares decisions on full and slim objects).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from dihera.constants import ANNOTATION_ARTIFACT_COLLECTOR, ANNOTATION_NODE_NAME
from dihera.objects import slim_artifact
from dihera.scaling.dag import retired_dag_tasks, workflow_nodes

__all__ = ["SLIMMERS", "slim_configmap", "slim_dijob", "slim_pod", "slim_service", "slim_workflow", "slim_workload"]

_META = ("name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp")
#: Annotations no decision reads that can be large (kubectl apply's copy of the whole object).
_DROPPED_ANNOTATIONS = frozenset({"kubectl.kubernetes.io/last-applied-configuration"})


#: The pod annotations decisions read: its node, and the container that collects its artifacts (not the user's).
_POD_ANNOTATIONS = frozenset({ANNOTATION_NODE_NAME, ANNOTATION_ARTIFACT_COLLECTOR})


def _pick(obj: Mapping[str, Any] | None, keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: obj[k] for k in keys if obj and obj.get(k) is not None}


def _metadata(obj: Mapping[str, Any], annotations: Callable[[str], bool] = lambda _: True) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    out = _pick(meta, _META)
    for key in ("labels", "ownerReferences"):
        if meta.get(key):
            out[key] = meta[key]
    kept = {
        k: v for k, v in (meta.get("annotations") or {}).items() if k not in _DROPPED_ANNOTATIONS and annotations(k)
    }
    if kept:
        out["annotations"] = kept
    return out


def slim_dijob(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The whole DIJob (spec and status are all read) without ``managedFields``."""
    out = {k: v for k, v in obj.items() if k != "metadata"}
    out["metadata"] = _metadata(obj)
    return out


def slim_configmap(obj: Mapping[str, Any]) -> dict[str, Any]:
    return {"metadata": _metadata(obj), "data": dict(obj.get("data") or {})}


def slim_service(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of a job's headless Service dihera sets (what a repair compares)."""
    spec = _pick(obj.get("spec"), ("clusterIP", "publishNotReadyAddresses", "selector", "ports"))
    return {"metadata": _metadata(obj), "spec": spec}


def _container(c: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"name": c.get("name")}
    memory = ((c.get("resources") or {}).get("limits") or {}).get("memory")
    if memory is not None:
        out["resources"] = {"limits": {"memory": memory}}
    return out


def _container_status(cs: Mapping[str, Any]) -> dict[str, Any]:
    return _pick(cs, ("name", "state", "lastState", "ready"))


def slim_pod(obj: Mapping[str, Any]) -> dict[str, Any]:
    """Phase, conditions and container states; of the spec, each container's name and memory limit."""
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    out_spec = {k: [_container(c) for c in spec.get(k) or []] for k in ("initContainers", "containers") if spec.get(k)}
    out_status = _pick(status, ("phase", "reason", "message"))
    if status.get("conditions"):
        out_status["conditions"] = [_pick(c, ("type", "status", "reason", "message")) for c in status["conditions"]]
    for key in ("initContainerStatuses", "containerStatuses"):
        if status.get(key):
            out_status[key] = [_container_status(cs) for cs in status[key]]
    return {
        "metadata": _metadata(obj, lambda k: k in _POD_ANNOTATIONS),
        "spec": out_spec,
        "status": out_status,
    }


def _template(t: Mapping[str, Any]) -> dict[str, Any]:
    """A template's name and labels; a DAG's task names and templates (scaling's tombstones)."""
    out = _pick(t, ("name",))
    labels = (t.get("metadata") or {}).get("labels")
    if labels:
        out["metadata"] = {"labels": labels}
    if "dag" in t:
        tasks = (t.get("dag") or {}).get("tasks") or []
        out["dag"] = {"tasks": [_pick(task, ("name", "template")) for task in tasks]}
    return out


def _node(node: Mapping[str, Any]) -> dict[str, Any]:
    """A node's name, type, phase, message and progress, and its output artifacts' names and keys
    (status.artifacts)."""
    out = _pick(node, ("name", "type", "phase", "message", "progress"))
    stored = [slim_artifact(a) for a in (node.get("outputs") or {}).get("artifacts") or [] if isinstance(a, Mapping)]
    if stored:
        out["outputs"] = {"artifacts": stored}
    return out


def slim_workflow(obj: Mapping[str, Any]) -> dict[str, Any]:
    """Phase, message, progress, the Pod nodes and the retired DAG tasks' nodes (name, type, phase, message,
    progress, stored artifacts), the DAG's slots, ``spec.shutdown`` and ``spec.suspend`` (Argo's STOP/TERMINATE
    and SUSPEND)."""
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    out_spec = _pick(spec, ("shutdown", "suspend"))
    out_spec["templates"] = [_template(t) for t in spec.get("templates") or []]
    prefix = f"{(obj.get('metadata') or {}).get('name')}."
    tombstones = {prefix + task for task in retired_dag_tasks(obj)}  # whether Argo finished them (retired_pods)
    nodes = {
        node_id: _node(node)
        for node_id, node in workflow_nodes(obj).items()  # compressedNodes unpacked: a big job's slim copy is small
        if node.get("type") == "Pod" or node.get("name") in tombstones
    }
    out_status = _pick(status, ("phase", "message", "progress"))
    if nodes:
        out_status["nodes"] = nodes
    return {"metadata": _metadata(obj), "spec": out_spec, "status": out_status}


def slim_workload(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A Kueue Workload: its podSets' names and counts, its conditions, admission and reclaimable pods
    (what :mod:`dihera.queueing` reads)."""
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    out_spec = _pick(spec, ("queueName", "priority"))
    out_spec["podSets"] = [_pick(p, ("name", "count")) for p in spec.get("podSets") or []]
    return {
        "metadata": _metadata(obj),
        "spec": out_spec,
        "status": _pick(status, ("conditions", "admission", "reclaimablePods")),
    }


#: Kind → its slimmer.
SLIMMERS: dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]] = {
    "DIJob": slim_dijob,
    "ConfigMap": slim_configmap,
    "Service": slim_service,
    "Pod": slim_pod,
    "Workflow": slim_workflow,
    "Workload": slim_workload,
}
