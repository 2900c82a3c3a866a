"""Pods as the API server serves them to the controller and the di-server: metadata, then status."""

from __future__ import annotations

import copy
from typing import Any, Self

from dihera.constants import ANNOTATION_NODE_NAME, LABEL_POD
from tests.builders.objects import ObjectBuilder

__all__ = ["PodBuilder"]


class PodBuilder(ObjectBuilder):
    """A pod, fluently: ``PodBuilder("j-learner-0").job("j").host("j-learner-0").phase("Running").ready().obj()``.

    ``obj()`` holds ``metadata`` and, once a status call was made, ``status`` (no ``spec``: the code under
    test reads a pod's labels, annotations and status).
    """

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self._status: dict[str, Any] | None = None

    # -- metadata: what links a pod to its replica ----------------------------------------------------------

    def host(self, hostname: str) -> Self:
        """The ``diengine/pod`` label: the replica's hostname, ``<job>-<task>-<index>``."""
        return self.label(LABEL_POD, hostname)

    def node_name(self, node: str) -> Self:
        """Argo's ``workflows.argoproj.io/node-name`` annotation: ``<workflow>.<dag task>(<attempt>)``."""
        return self.annotation(ANNOTATION_NODE_NAME, node)

    def replica(self, job: str, task: str, index: int, attempt: int | None = None) -> Self:
        """The pod of replica ``<task>-<index>`` of ``job``: its hostname label and Argo's node name, which ends
        in ``(<attempt>)`` when ``attempt`` is given (Argo's name of a retried node's attempt)."""
        node = f"{job}.{task}-{index}" + (f"({attempt})" if attempt is not None else "")
        return self.host(f"{job}-{task}-{index}").node_name(node)

    # -- status -------------------------------------------------------------------------------------------------

    def _state(self) -> dict[str, Any]:
        if self._status is None:
            self._status = {}
        return self._status

    def phase(self, phase: str) -> Self:
        self._state()["phase"] = phase
        return self

    def reason(self, reason: str, message: str | None = None) -> Self:
        """``status.reason`` and ``status.message``: why the kubelet ended the pod (``Evicted``, ...)."""
        self._state()["reason"] = reason
        if message is not None:
            self._state()["message"] = message
        return self

    def condition(self, type_: str, status: str, **fields: Any) -> Self:
        """One more ``status.conditions`` entry."""
        self._state().setdefault("conditions", []).append({"type": type_, "status": status, **fields})
        return self

    def ready(self, ready: bool = True) -> Self:
        """The ``Ready`` condition, ``"True"`` or ``"False"``."""
        return self.condition("Ready", str(ready))

    def _container(self, name: str, state: dict[str, Any]) -> Self:
        self._state().setdefault("containerStatuses", []).append({"name": name, "state": state})
        return self

    def running(self, container: str = "main") -> Self:
        """A ``containerStatuses`` entry: ``container`` running."""
        return self._container(container, {"running": {}})

    def terminated(self, container: str, exit_code: int, **fields: Any) -> Self:
        """A ``containerStatuses`` entry: ``container`` exited with ``exit_code`` (``reason="OOMKilled"``...)."""
        return self._container(container, {"terminated": {"exitCode": exit_code, **fields}})

    def waiting(self, container: str, reason: str, message: str | None = None) -> Self:
        """A ``containerStatuses`` entry: ``container`` waiting to start, for ``reason``."""
        waiting: dict[str, Any] = {"reason": reason}
        if message is not None:
            waiting["message"] = message
        return self._container(container, {"waiting": waiting})

    def obj(self) -> dict[str, Any]:
        pod: dict[str, Any] = {"metadata": self.metadata()}
        if self._status is not None:
            pod["status"] = copy.deepcopy(self._status)
        return pod
