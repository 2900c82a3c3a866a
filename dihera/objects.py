"""Typed views of the Kubernetes and Argo objects dihera reads and builds (pure): their phases as enums, the
metadata accessors, the one owner-reference builder, and the one memo of what is worked out per object
version.

Objects stay the plain dicts the API serves (and the watch layer keeps slim copies of); their shapes are
the TypedDicts of :mod:`dihera.shapes` (``Pod``, ``Workflow``, ``ConfigMap``...). These functions read them
the one way: :func:`metadata` takes any object (typed or raw) and answers its typed ``ObjectMeta``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from enum import StrEnum
from typing import Generic, Literal, TypeVar, cast

from dihera.shapes.meta import ObjectMeta, OwnerReference
from dihera.shapes.pod import Pod
from dihera.shapes.workflow import Artifact, ArtifactLocation, Workflow

__all__ = [
    "ARTIFACT_KEY_FIELDS",
    "ARTIFACT_LOCATIONS",
    "FAILED_NODE_PHASES",
    "FULFILLED_NODE_PHASES",
    "LIVE_POD_PHASES",
    "TERMINAL_POD_PHASES",
    "NodePhase",
    "PodPhase",
    "VersionMemo",
    "WorkflowPhase",
    "artifact_key",
    "deleting",
    "labels",
    "metadata",
    "owned_by",
    "owner_reference",
    "pod_phase",
    "slim_artifact",
    "version_key",
    "workflow_phase",
]

T = TypeVar("T")


class PodPhase(StrEnum):
    """``status.phase`` of a pod."""

    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    UNKNOWN = "Unknown"


class NodePhase(StrEnum):
    """``phase`` of an Argo Workflow node (a DAG task, a retry, an attempt's pod)."""

    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    ERROR = "Error"
    SKIPPED = "Skipped"
    OMITTED = "Omitted"


class WorkflowPhase(StrEnum):
    """``status.phase`` of an Argo Workflow."""

    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    ERROR = "Error"


#: Pod phases after which a pod runs no more.
TERMINAL_POD_PHASES = frozenset({PodPhase.SUCCEEDED, PodPhase.FAILED})
#: Pod phases of a pod that may still run (what cleanPodPolicy Running stops).
LIVE_POD_PHASES = frozenset({PodPhase.PENDING, PodPhase.RUNNING, PodPhase.UNKNOWN})
#: Argo node (and Workflow) phases that mean failure.
FAILED_NODE_PHASES = frozenset({NodePhase.FAILED, NodePhase.ERROR})
#: Argo node phases after which Argo never starts a pod for the node again (Argo's ``Fulfilled``).
FULFILLED_NODE_PHASES = frozenset(
    {NodePhase.SUCCEEDED, NodePhase.FAILED, NodePhase.ERROR, NodePhase.SKIPPED, NodePhase.OMITTED}
)


def metadata(obj: Mapping[str, object] | None) -> ObjectMeta:
    """``metadata`` of an object, typed or raw ({} when it has none): where a raw dict becomes a typed view."""
    meta = (obj or {}).get("metadata")
    return cast(ObjectMeta, meta) if isinstance(meta, Mapping) else {}


def labels(obj: Mapping[str, object] | None) -> Mapping[str, str]:
    return metadata(obj).get("labels") or {}


def deleting(obj: Mapping[str, object] | None) -> bool:
    """Whether the object is being deleted (it has a ``deletionTimestamp``)."""
    return bool(metadata(obj).get("deletionTimestamp"))


_POD_PHASES = frozenset(p.value for p in PodPhase)
_WORKFLOW_PHASES = frozenset(p.value for p in WorkflowPhase)


def pod_phase(pod: Pod) -> PodPhase | None:
    """A pod's phase (None while it has none yet)."""
    phase = pod.get("status", {}).get("phase")
    return PodPhase(phase) if phase in _POD_PHASES else None


def workflow_phase(workflow: Workflow | None) -> WorkflowPhase | None:
    """A Workflow's phase (None before Argo set one)."""
    phase = (workflow or {}).get("status", {}).get("phase")
    return WorkflowPhase(phase) if phase in _WORKFLOW_PHASES else None


_Location = Literal["s3", "gcs", "oss", "azure", "hdfs", "artifactory", "http", "git", "raw", "plugin"]
_KeyField = Literal["key", "blob", "path", "url", "repo"]
#: An Argo artifact's location, by the repository's kind, and the fields naming its object there (in the
#: order :func:`artifact_key` tries them; :class:`dihera.shapes.workflow.Artifact` declares them all).
ARTIFACT_LOCATIONS: tuple[_Location, ...] = (
    "s3", "gcs", "oss", "azure", "hdfs", "artifactory", "http", "git", "raw", "plugin"
)  # fmt: skip
ARTIFACT_KEY_FIELDS: tuple[_KeyField, ...] = ("key", "blob", "path", "url", "repo")


def artifact_key(artifact: Artifact) -> str | None:
    """Where an Argo artifact's repository keeps it: its location's key (blob, path, URL...), else None."""
    for kind in ARTIFACT_LOCATIONS:
        location = artifact.get(kind)
        if isinstance(location, Mapping):
            for field in ARTIFACT_KEY_FIELDS:
                value = location.get(field)
                if isinstance(value, str):
                    return value
    return None


def slim_artifact(artifact: Artifact) -> Artifact:
    """An Argo artifact's name and the fields of :func:`artifact_key` (what a watch cache keeps of it)."""
    out: Artifact = {"name": artifact.get("name", "")}
    for kind in ARTIFACT_LOCATIONS:
        location = artifact.get(kind)
        if isinstance(location, Mapping):
            kept: ArtifactLocation = {}
            for field in ARTIFACT_KEY_FIELDS:
                value = location.get(field)
                if isinstance(value, str):
                    kept[field] = value
            out[kind] = kept
    return out


def owner_reference(api_version: str, kind: str, name: str, uid: str) -> OwnerReference:
    """The ownerReference making the owner the controller of an object: it is garbage-collected with the
    owner, and the owner's deletion in the foreground waits for it (``blockOwnerDeletion``)."""
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def owned_by(obj: Mapping[str, object], uid: str | None) -> bool:
    """Whether ``obj`` has an ownerReference to ``uid``."""
    return uid is not None and any(r.get("uid") == uid for r in metadata(obj).get("ownerReferences") or [])


def version_key(obj: Mapping[str, object] | None) -> tuple[str, str] | None:
    """``(uid, resourceVersion)``: one version of one object, which never changes (None without them)."""
    meta = metadata(obj)
    uid, version = meta.get("uid"), meta.get("resourceVersion")
    return (str(uid), str(version)) if uid and version else None


class VersionMemo(Generic[T]):
    """What ``work(obj, *args)`` makes of an object, remembered for its newest version (:func:`version_key`): a
    pass over a big job works out only what changed. One entry per object: a new version replaces the old one,
    so an object that changes often (a pod's status) holds one entry, not one per version. ``args`` must not
    change the answer for one version of one object (the job an object belongs to, the settings). Starts over
    when it holds ``kept`` objects (those deleted since go then). An object without a uid or version is worked
    out every time. Safe across threads (one dict operation at a time; two threads may work one version out
    twice, equally)."""

    def __init__(self, work: Callable[..., T], kept: int) -> None:
        self._work = work
        self._kept = kept
        self._memo: dict[str, tuple[str, T]] = {}

    def __call__(self, obj: Mapping[str, object], *args: object) -> T:
        key = version_key(obj)
        if key is None:
            return self._work(obj, *args)
        uid, version = key
        found = self._memo.get(uid)
        if found is not None and found[0] == version:
            return found[1]
        value = self._work(obj, *args)
        if found is None and len(self._memo) >= self._kept:
            self._memo.clear()
        self._memo[uid] = (version, value)
        return value

    def __len__(self) -> int:
        return len(self._memo)

    def clear(self) -> None:
        self._memo.clear()
