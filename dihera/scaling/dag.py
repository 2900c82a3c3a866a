"""A running job's Workflow DAG as scaling sees it (pure): live replica slots and retired tombstones.

A removed replica's DAG task stays in the DAG with its template swapped for ``dihera-retired``
(``suspend: {duration: "0"}``): Argo marks it Succeeded at once and never retries it. A DAG task
name is never used twice in one Workflow.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import json
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dihera.constants import ANNOTATION_GENERATION
from dihera.constants import WORKFLOW_ENTRYPOINT as ENTRYPOINT
from dihera.errors import NotDiheraWorkflow
from dihera.membership import Membership, Replica
from dihera.naming import SHORT_TEMPLATE_SUFFIX, dag_task_name
from dihera.objects import VersionMemo

__all__ = [
    "RETIRED_TEMPLATE",
    "DagSlots",
    "live_replicas",
    "membership_of_workflow",
    "read_dag",
    "retired_dag_tasks",
    "workflow_generation",
    "workflow_nodes",
]

RETIRED_TEMPLATE = "dihera-retired"


@dataclass(frozen=True)
class DagSlots:
    """The entry DAG of a job's Workflow: where it is and which replica slots it holds."""

    template_index: int
    live: Mapping[str, int]  # DAG task name -> position, for replicas still running
    retired: Mapping[str, int]  # DAG task name -> position, for tombstones
    templates: Mapping[str, int]  # template name -> position in spec.templates

    @property
    def tasks_path(self) -> str:
        return f"/spec/templates/{self.template_index}/dag/tasks"

    def used(self, name: str) -> bool:
        return name in self.live or name in self.retired


def read_dag(workflow: Mapping[str, Any]) -> DagSlots:
    """Find the entry DAG ``dijob`` of a rendered Workflow; ScaleError(conflict) if it has none."""
    templates = list((workflow.get("spec") or {}).get("templates") or [])
    positions = {t.get("name"): i for i, t in enumerate(templates)}
    index = positions.get(ENTRYPOINT)
    if index is None or "dag" not in templates[index]:
        name = (workflow.get("metadata") or {}).get("name")
        raise NotDiheraWorkflow(f"Workflow {name}: no DAG template {ENTRYPOINT!r}; not a dihera Workflow")
    live: dict[str, int] = {}
    retired: dict[str, int] = {}
    for pos, task in enumerate(templates[index]["dag"].get("tasks") or []):
        (retired if task.get("template") == RETIRED_TEMPLATE else live)[task["name"]] = pos
    return DagSlots(index, live, retired, {str(k): v for k, v in positions.items()})


def _read_retired(workflow: Mapping[str, Any]) -> frozenset[str]:
    out: set[str] = set()
    for template in (workflow.get("spec") or {}).get("templates") or []:
        for task in (template.get("dag") or {}).get("tasks") or []:
            if task.get("template") == RETIRED_TEMPLATE:
                out.add(str(task.get("name")))
    return frozenset(out)


#: A Workflow's retired DAG tasks per version: a big job's passes read its 2,000-task DAG once per version
#: of the Workflow, not several times per pass.
_retired_of: VersionMemo[frozenset[str]] = VersionMemo(_read_retired, kept=64)


def retired_dag_tasks(workflow: Mapping[str, Any] | None) -> frozenset[str]:
    """Names of the DAG tasks scaling retired (template ``dihera-retired``) in the Workflow's spec."""
    return _retired_of(workflow) if workflow else frozenset()


def workflow_generation(workflow: Mapping[str, Any]) -> int:
    """The membership generation the Workflow's DAG was last converged to (1: as first rendered)."""
    annotations = (workflow.get("metadata") or {}).get("annotations") or {}
    return int(annotations.get(ANNOTATION_GENERATION) or 1)


def membership_of_workflow(workflow: Mapping[str, Any], generation: int) -> Membership:
    """The replicas the Workflow's DAG runs (its live tasks: template ``<task>`` or ``<task>-short``, and
    their ``index`` and ``rank`` parameters), as the membership of ``generation``: what rebuilds a
    membership ConfigMap that was deleted. Needs the Workflow as the API serves it (the watch cache's
    slim copy keeps no parameters)."""
    slots = read_dag(workflow)
    tasks = workflow["spec"]["templates"][slots.template_index]["dag"]["tasks"]
    replicas = []
    for pos in slots.live.values():
        task = tasks[pos]
        params = {p["name"]: p.get("value") for p in (task.get("arguments") or {}).get("parameters") or []}
        template = str(task["template"])
        short = template.endswith(SHORT_TEMPLATE_SUFFIX)
        name = template[: -len(SHORT_TEMPLATE_SUFFIX)] if short else template
        replicas.append(Replica(int(params["rank"]), name, int(params["index"]), short))
    return Membership(generation, tuple(sorted(replicas)))


def live_replicas(membership: Membership, workflow: Mapping[str, Any] | None) -> Membership:
    """``membership`` without the replicas whose DAG task is retired (same generation)."""
    retired = retired_dag_tasks(workflow)
    if not retired:
        return membership
    kept = tuple(r for r in membership.replicas if dag_task_name(r.task, r.index) not in retired)
    return Membership(membership.generation, kept)


def workflow_nodes(workflow: Mapping[str, Any]) -> Mapping[str, Mapping[str, Any]]:
    """The Workflow's ``status.nodes``; Argo moves them to ``status.compressedNodes`` (gzip, base64) once
    the Workflow passes 1 MiB (a job of ~1,300 replicas), and they are read from there."""
    status = workflow.get("status") or {}
    nodes: Mapping[str, Mapping[str, Any]] = status.get("nodes") or {}
    packed = status.get("compressedNodes")
    if nodes or not packed:
        return nodes
    try:
        unpacked: Mapping[str, Mapping[str, Any]] = json.loads(gzip.decompress(base64.b64decode(packed)))
    except (binascii.Error, OSError, EOFError, zlib.error, ValueError):  # another algorithm (zstd, brotli)
        return {}
    return unpacked
