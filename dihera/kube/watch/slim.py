"""The fields of each watched object the controller reads (pure): what its watch cache keeps.

A pod or a Workflow as the API serves it is mostly what the controller never looks at
(``managedFields``, every container's spec, Argo's per-node inputs and outputs); the cache keeps a
copy with only what :mod:`dihera.controller.decide`, the di-server's views,
:mod:`dihera.scaling.spec_edit` and :mod:`dihera.scaling.retired_pods` read, so 500 jobs cost little
memory. Which fields those are is not listed here: it is the typed views of :mod:`dihera.shapes`
(``Pod``, ``Workflow``, ``ConfigMap``, ``Service``, ``Workload``), walked once at import into a slimmer
that keeps exactly the keys each TypedDict declares. A decision that reads a field the shape does not
declare is a type error, not a silent ``None``: indexing it fails (mypy: key not in the TypedDict), and its
``.get`` is typed ``object``, which fails where it is read as a str, a number or a mapping (mypy lets it
pass only in an ``==`` or a truth test). To read a new field, declare it in the shape and the cache keeps
it (``tests/unit/test_kube_watch_slim.py`` compares decisions on full and slim objects).

How a shape's types are kept: a TypedDict → its declared keys, each slimmed by its type; ``list[X]`` →
every element slimmed (none dropped: a Workflow template's position is a patch path); ``dict[str, X]`` →
every value slimmed; ``str``/``int``/``bool`` → the value if it is one; ``object`` → the value whole
(opaque, compared or passed on as it is). ``None`` values are dropped, and so is a mapping that slimming
emptied (one the API server sent empty is kept empty). Beyond the shapes: annotations no decision reads
that can be large are dropped (a pod keeps only the two decisions read), a Workflow keeps only its Pod
nodes and its retired DAG tasks' nodes (``status.compressedNodes`` unpacked into ``status.nodes``), and
a DIJob is kept whole but for ``managedFields`` (its spec and status are all read).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import cast, get_args, get_origin, get_type_hints, is_typeddict

from dihera.constants import ANNOTATION_ARTIFACT_COLLECTOR, ANNOTATION_NODE_NAME
from dihera.scaling.dag import retired_dag_tasks, workflow_nodes
from dihera.shapes.configmap import ConfigMap
from dihera.shapes.meta import ObjectMeta
from dihera.shapes.pod import Pod
from dihera.shapes.service import Service
from dihera.shapes.workflow import NodeStatus, Workflow, WorkflowSpec, WorkflowStatus
from dihera.shapes.workload import Workload

__all__ = [
    "SLIMMERS",
    "Slimmer",
    "kept_fields",
    "slim_configmap",
    "slim_dijob",
    "slim_pod",
    "slim_service",
    "slim_workflow",
    "slim_workload",
    "slimmer",
]

#: Annotations no decision reads that can be large (kubectl apply's copy of the whole object).
_DROPPED_ANNOTATIONS = frozenset({"kubectl.kubernetes.io/last-applied-configuration"})
#: The pod annotations decisions read: its node, and the container that collects its artifacts (not the user's).
_POD_ANNOTATIONS = frozenset({ANNOTATION_NODE_NAME, ANNOTATION_ARTIFACT_COLLECTOR})


class _Dropped:
    """What a slimmer answers for a value its type does not keep."""


_DROP = _Dropped()
#: The leaf types a shape may declare → what a value must be an instance of to be kept.
_LEAVES: dict[object, type] = {str: str, int: int, bool: bool, object: object}
#: A value as a watch event brings it → what the cache keeps of it (:data:`_DROP`: nothing).
Slimmer = Callable[[object], object]


def _typeddict(shape: type) -> Slimmer:
    hints = get_type_hints(shape)
    # fields whose value is kept as it is when it is of its type (str, int, bool; object: any), checked inline:
    # a watch event slims every pod and Workflow it brings, and a call per field would triple the cost
    leaves = tuple((key, _LEAVES[tp]) for key, tp in hints.items() if tp in _LEAVES)
    nested = tuple((key, slimmer(tp)) for key, tp in hints.items() if tp not in _LEAVES)

    def slim(value: object) -> object:
        if not isinstance(value, dict):  # JSON objects are dicts (a Mapping check costs an ABC lookup per dict)
            return {}
        out: dict[str, object] = {}
        for key, kind in leaves:
            raw = value.get(key)
            if raw is not None and isinstance(raw, kind):
                out[key] = raw
        for key, field in nested:
            raw = value.get(key)
            if raw is None:
                continue
            kept = field(raw)
            if kept is _DROP or (isinstance(kept, dict) and not kept and raw):
                continue  # not of its type, or slimming emptied it
            out[key] = kept
        return out

    return slim


def _list(element: Slimmer) -> Slimmer:
    def slim(value: object) -> object:
        if not isinstance(value, list):
            return _DROP
        return [kept for kept in map(element, value) if kept is not _DROP]

    return slim


def _dict(item: Slimmer) -> Slimmer:
    def slim(value: object) -> object:
        if not isinstance(value, dict):
            return _DROP
        return {k: kept for k, v in value.items() if v is not None and (kept := item(v)) is not _DROP}

    return slim


def _leaf_dict(kind: type) -> Slimmer:
    """``dict[str, str]`` (labels, annotations, a ConfigMap's data): the entries of that type, inline."""

    def slim(value: object) -> object:
        if not isinstance(value, dict):
            return _DROP
        return {k: v for k, v in value.items() if isinstance(v, kind)}

    return slim


def _leaf(tp: type) -> Slimmer:
    return lambda value: value if isinstance(value, tp) else _DROP


def _whole(value: object) -> object:
    return value


def slimmer(tp: object) -> Slimmer:
    """The slimmer keeping what the type ``tp`` declares (a TypedDict of :mod:`dihera.shapes`, or a type in
    one); TypeError for a type no shape may use."""
    if tp is object:
        return _whole
    if isinstance(tp, type) and is_typeddict(tp):
        return _typeddict(tp)
    origin, args = get_origin(tp), get_args(tp)
    if origin is list:
        return _list(slimmer(args[0]))
    if origin is dict and args[0] is str:
        return _leaf_dict(_LEAVES[args[1]]) if args[1] in _LEAVES else _dict(slimmer(args[1]))
    if tp in (str, int, bool):
        return _leaf(cast(type, tp))
    raise TypeError(
        f"a shape's field type must be a TypedDict, list, dict[str, ...], str, int, bool or object; got {tp!r}"
    )


def kept_fields(shape: type, prefix: str = "") -> list[str]:
    """The dotted paths of every field a shape declares (what its slim copy may hold): for docs and tests."""
    out: list[str] = []
    for key, tp in get_type_hints(shape).items():
        path = f"{prefix}{key}"
        out.append(path)
        while get_origin(tp) in (list, dict):
            tp = get_args(tp)[-1]
        if isinstance(tp, type) and is_typeddict(tp):
            out.extend(kept_fields(tp, f"{path}."))
    return out


_SLIM_META = slimmer(ObjectMeta)
_SLIM_POD = slimmer(Pod)
_SLIM_WORKFLOW_SPEC = slimmer(WorkflowSpec)
_SLIM_WORKFLOW_STATUS = slimmer(WorkflowStatus)
_SLIM_NODE = slimmer(NodeStatus)
_SLIM_CONFIGMAP = slimmer(ConfigMap)
_SLIM_SERVICE = slimmer(Service)
_SLIM_WORKLOAD = slimmer(Workload)


def _annotations(slim: dict[str, object], keep: Callable[[str], bool] = lambda _: True) -> dict[str, object]:
    """``slim`` with its metadata's annotations only those ``keep`` keeps (never :data:`_DROPPED_ANNOTATIONS`)."""
    meta = slim.get("metadata")
    if isinstance(meta, dict) and isinstance(meta.get("annotations"), dict):
        kept = {k: v for k, v in meta["annotations"].items() if k not in _DROPPED_ANNOTATIONS and keep(k)}
        if kept:
            meta["annotations"] = kept
        else:
            del meta["annotations"]
    return slim


def _kept(slim: Slimmer, obj: Mapping[str, object]) -> dict[str, object]:
    return _annotations(cast(dict[str, object], slim(obj)))


def slim_dijob(obj: Mapping[str, object]) -> dict[str, object]:
    """The whole DIJob (spec and status are all read) without ``managedFields``."""
    out = {k: v for k, v in obj.items() if k != "metadata"}
    out["metadata"] = _SLIM_META(obj.get("metadata") or {})
    return _annotations(out)


def slim_configmap(obj: Mapping[str, object]) -> ConfigMap:
    return cast(ConfigMap, _kept(_SLIM_CONFIGMAP, obj))


def slim_service(obj: Mapping[str, object]) -> Service:
    """The fields of a job's headless Service dihera sets (what a repair compares)."""
    return cast(Service, _kept(_SLIM_SERVICE, obj))


def slim_pod(obj: Mapping[str, object]) -> Pod:
    """Phase, conditions and container states; of the spec, each container's name and memory limit."""
    return cast(Pod, _annotations(cast(dict[str, object], _SLIM_POD(obj)), lambda k: k in _POD_ANNOTATIONS))


def slim_workflow(obj: Mapping[str, object]) -> Workflow:
    """Phase, message, progress, the Pod nodes and the retired DAG tasks' nodes (name, type, phase, message,
    progress, stored artifacts), the DAG's slots, ``spec.shutdown`` and ``spec.suspend`` (Argo's STOP/TERMINATE
    and SUSPEND)."""
    out: dict[str, object] = _annotations({"metadata": _SLIM_META(obj.get("metadata") or {})})
    out["spec"] = _SLIM_WORKFLOW_SPEC(obj.get("spec") or {})
    status = cast(dict[str, object], _SLIM_WORKFLOW_STATUS({k: v for k, v in _status(obj).items() if k != "nodes"}))
    name = cast(ObjectMeta, out.get("metadata") or {}).get("name")
    tombstones = {f"{name}.{task}" for task in retired_dag_tasks(obj)}  # whether Argo finished them (retired_pods)
    nodes = {
        node_id: _SLIM_NODE(node)
        for node_id, node in workflow_nodes(obj).items()  # compressedNodes unpacked: a big job's slim copy is small
        if node.get("type") == "Pod" or node.get("name") in tombstones
    }
    if nodes:
        status["nodes"] = nodes
    out["status"] = status
    return cast(Workflow, out)


def _status(obj: Mapping[str, object]) -> Mapping[str, object]:
    status = obj.get("status")
    return cast(Mapping[str, object], status) if isinstance(status, Mapping) else {}


def slim_workload(obj: Mapping[str, object]) -> Workload:
    """A Kueue Workload: its podSets' names and counts, its conditions, admission and reclaimable pods
    (what :mod:`dihera.queueing` reads)."""
    return cast(Workload, _kept(_SLIM_WORKLOAD, obj))


#: Kind → its slimmer.
SLIMMERS: dict[str, Callable[[Mapping[str, object]], Mapping[str, object]]] = {
    "DIJob": slim_dijob,
    "ConfigMap": slim_configmap,
    "Service": slim_service,
    "Pod": slim_pod,
    "Workflow": slim_workflow,
    "Workload": slim_workload,
}
