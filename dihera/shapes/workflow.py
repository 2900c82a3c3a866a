"""An Argo Workflow as dihera reads it (``argoproj.io/v1alpha1 Workflow``): ``spec.shutdown``/``suspend``
(STOP, TERMINATE, SUSPEND), the templates' names and labels and the entry DAG's tasks (scaling's slots and
tombstones), and the status' phase, message, progress and nodes (each node's name, type, phase, message,
progress and output artifacts' keys). The watch cache keeps exactly these fields
(:mod:`dihera.kube.watch.slim`; ``status.compressedNodes`` it keeps unpacked into ``status.nodes``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypedDict, cast

from dihera.shapes.meta import ObjectMeta

__all__ = [
    "Artifact",
    "ArtifactLocation",
    "DAGTask",
    "DAGTemplate",
    "NodeOutputs",
    "NodeStatus",
    "Template",
    "TemplateMetadata",
    "Workflow",
    "WorkflowSpec",
    "WorkflowStatus",
    "as_nodes",
    "as_workflow",
]


class ArtifactLocation(TypedDict, total=False):
    """Where a repository keeps an artifact: the field naming its object there (one of them is set)."""

    key: str
    blob: str
    path: str
    url: str
    repo: str


class Artifact(TypedDict, total=False):
    """An output artifact: its name and its location, by the repository's kind (one of them is set)."""

    name: str
    s3: ArtifactLocation
    gcs: ArtifactLocation
    oss: ArtifactLocation
    azure: ArtifactLocation
    hdfs: ArtifactLocation
    artifactory: ArtifactLocation
    http: ArtifactLocation
    git: ArtifactLocation
    raw: ArtifactLocation
    plugin: ArtifactLocation


class NodeOutputs(TypedDict, total=False):
    artifacts: list[Artifact]


class NodeStatus(TypedDict, total=False):
    """One node of ``status.nodes`` (a DAG task, a retry, an attempt's pod)."""

    name: str
    type: str
    phase: str
    message: str
    progress: str
    outputs: NodeOutputs


class DAGTask(TypedDict, total=False):
    name: str
    template: str


class DAGTemplate(TypedDict, total=False):
    tasks: list[DAGTask]


class TemplateMetadata(TypedDict, total=False):
    labels: dict[str, str]


class Template(TypedDict, total=False):
    name: str
    metadata: TemplateMetadata
    dag: DAGTemplate


class WorkflowSpec(TypedDict, total=False):
    shutdown: str
    suspend: bool
    templates: list[Template]


class WorkflowStatus(TypedDict, total=False):
    phase: str
    message: str
    progress: str
    nodes: dict[str, NodeStatus]


class Workflow(TypedDict, total=False):
    metadata: ObjectMeta
    spec: WorkflowSpec
    status: WorkflowStatus


def as_workflow(raw: Mapping[str, object]) -> Workflow:
    """A Workflow as the API server or the watch cache served it, read through its typed view (the one place a raw
    dict becomes one: a full object holds more than the view declares; the declared keys read the same)."""
    return cast(Workflow, raw)


def as_nodes(raw: Mapping[str, object]) -> Mapping[str, NodeStatus]:
    """``status.nodes`` (node id → node) as read (:func:`dihera.scaling.dag.workflow_nodes` unpacks
    ``compressedNodes``), through the nodes' typed view."""
    return cast(Mapping[str, NodeStatus], raw)
