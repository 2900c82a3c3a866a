"""``status.artifacts`` from the job's Workflow (pure; docs/artifacts.md): the ``spec.artifacts`` its replicas'
nodes stored, the latest attempt's for each replica.

Argo writes a node's outputs once its executor has stored them, which may be after the DIJob's phase is final
(the pod's wait container uploads after the user's containers ended), so this field is written after the end
too; :func:`dihera.controller.decide.status.compute_status` keeps every other field of a finished job.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from dihera.objects import artifact_key, metadata
from dihera.scaling.dag import workflow_nodes
from dihera.shapes.workflow import Artifact, NodeStatus, Workflow, as_nodes

__all__ = ["job_artifacts"]

_ATTEMPT = re.compile(r"\((\d+)\)$")


def _replica_attempt(node_name: str, prefix: str) -> tuple[str, int]:
    """``<workflow>.learner-0(2)`` → (``learner-0``, 2); no suffix: attempt 0."""
    attempt = _ATTEMPT.search(node_name)
    if attempt is None:
        return node_name[len(prefix) :], 0
    return node_name[len(prefix) : attempt.start()], int(attempt.group(1))


def _stored(node: NodeStatus, names: Collection[str]) -> list[Artifact]:
    """The node's output artifacts named in ``names``."""
    arts = node.get("outputs", {}).get("artifacts", [])
    return [a for a in arts if isinstance(a, dict) and a.get("name") in names]


def job_artifacts(workflow: Workflow | None, names: Collection[str]) -> list[dict[str, str]]:
    """Every artifact in ``names`` a replica's node of ``workflow`` stored, its latest attempt's; in replica and
    artifact order."""
    if not workflow or not names:
        return []
    prefix = f"{metadata(workflow)['name']}."
    latest: dict[tuple[str, str], tuple[int, dict[str, str]]] = {}
    for node_id, node in as_nodes(workflow_nodes(workflow)).items():  # a node's id is its key (Argo's)
        name = node.get("name", "")
        if node.get("type") != "Pod" or not name.startswith(prefix):
            continue
        replica, number = _replica_attempt(name, prefix)
        for art in _stored(node, names):
            entry = {"name": art["name"], "replica": replica, "node": node_id}
            key = artifact_key(art)
            if key is not None:
                entry["key"] = key
            seen = latest.get((replica, entry["name"]))
            if seen is None or seen[0] < number:
                latest[(replica, entry["name"])] = (number, entry)
    return [latest[k][1] for k in sorted(latest)]
