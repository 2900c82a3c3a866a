"""Argo Workflows as dihera renders them (an entry DAG of one task per replica) and Argo's status nodes."""

from __future__ import annotations

import copy
from collections.abc import Collection, Iterable, Mapping
from typing import Any, Self

from dihera.constants import WORKFLOW_ENTRYPOINT
from dihera.membership import Membership
from dihera.scaling import RETIRED_TEMPLATE
from tests.builders.objects import ObjectBuilder

__all__ = ["WorkflowBuilder", "pod_node", "retry_node"]


def pod_node(name: str, phase: str, **fields: Any) -> dict[str, Any]:
    """An Argo status node of type ``Pod``: one attempt of a replica, ``name`` as ``<workflow>.<task>(<attempt>)``."""
    return {"name": name, "type": "Pod", "phase": phase, **fields}


def retry_node(name: str, phase: str, **fields: Any) -> dict[str, Any]:
    """An Argo status node of type ``Retry``: a DAG task with a retryStrategy, ``name`` as ``<workflow>.<task>``."""
    return {"name": name, "type": "Retry", "phase": phase, **fields}


class WorkflowBuilder(ObjectBuilder):
    """A Workflow, fluently: ``WorkflowBuilder("j").uid("wf").dag(MEMBERSHIP).phase("Running").nodes({}).obj()``.

    ``spec`` is there once a DAG call was made (``templates``: the ``dijob`` entry DAG, one task per replica
    named ``<task>-<index>`` running the template of its task, or ``dihera-retired`` once scaled away);
    ``status`` once a status call was made.
    """

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self._tasks: list[dict[str, Any]] | None = None
        self._status: dict[str, Any] | None = None

    # -- spec: the entry DAG ------------------------------------------------------------------------------------

    def replica(self, task: str, index: int, retired: bool = False) -> Self:
        """One more DAG task: replica ``<task>-<index>`` (a tombstone when ``retired``)."""
        if self._tasks is None:
            self._tasks = []
        self._tasks.append({"name": f"{task}-{index}", "template": RETIRED_TEMPLATE if retired else task})
        return self

    def dag(self, replicas: Membership | Iterable[tuple[str, int]], retired: Collection[str] = ()) -> Self:
        """A DAG task per replica (a membership's, or ``(task, index)`` pairs), in order; those named in
        ``retired`` (``"collector-1"``) are tombstones."""
        pairs = [(r.task, r.index) for r in replicas.replicas] if isinstance(replicas, Membership) else replicas
        if self._tasks is None:
            self._tasks = []
        for task, index in pairs:
            self.replica(task, index, retired=f"{task}-{index}" in retired)
        return self

    # -- status -------------------------------------------------------------------------------------------------

    def _state(self) -> dict[str, Any]:
        if self._status is None:
            self._status = {}
        return self._status

    def phase(self, phase: str) -> Self:
        self._state()["phase"] = phase
        return self

    def message(self, message: str) -> Self:
        self._state()["message"] = message
        return self

    def nodes(self, nodes: Mapping[str, dict[str, Any]]) -> Self:
        """Add ``nodes`` to ``status.nodes`` by node id (``status.nodes`` exists afterwards, even when empty)."""
        self._state().setdefault("nodes", {}).update(copy.deepcopy(dict(nodes)))
        return self

    def node(self, node_id: str, node: dict[str, Any]) -> Self:
        """One more status node (:func:`pod_node`, :func:`retry_node`) under ``node_id``."""
        return self.nodes({node_id: node})

    def obj(self) -> dict[str, Any]:
        wf: dict[str, Any] = {"metadata": self.metadata()}
        if self._tasks is not None:
            wf["spec"] = {"templates": [{"name": WORKFLOW_ENTRYPOINT, "dag": {"tasks": copy.deepcopy(self._tasks)}}]}
        if self._status is not None:
            wf["status"] = copy.deepcopy(self._status)
        return wf
