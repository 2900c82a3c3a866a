"""DIJob manifests (dicts, as ``kubectl apply`` sends them) and their tasks.

``job(task("learner"), task("collector", replicas=2), name="dqn")`` is the short form most tests need;
:class:`DIJobBuilder` and :class:`TaskBuilder` add what a manifest carries beyond it (namespace, uid,
generation, annotations, a status; a task's annotations, command or fields).
"""

from __future__ import annotations

import copy
from typing import Any, Self

from dihera.schema import GROUP, VERSION
from tests.builders.objects import ObjectBuilder

__all__ = ["IMAGE", "DIJobBuilder", "TaskBuilder", "container", "job", "task"]

IMAGE = "opendilab/ding:nightly"


def container(name: str = "main", **extra: Any) -> dict[str, Any]:
    """A container of a task's pod template: ``name``, the DI-engine image, and ``extra`` fields."""
    return {"name": name, "image": IMAGE, **extra}


class TaskBuilder:
    """One entry of ``spec.tasks``: ``TaskBuilder("collector").replicas(2).annotation(k, v).obj()``.

    It starts as ``{"type": type_, "template": {"spec": {"containers": [container()]}}}``.
    """

    def __init__(self, type_: str = "none") -> None:
        self._task: dict[str, Any] = {"type": type_, "template": {"spec": {"containers": [container()]}}}

    def name(self, name: str) -> Self:
        self._task["name"] = name
        return self

    def replicas(self, replicas: int) -> Self:
        self._task["replicas"] = replicas
        return self

    def fields(self, **fields: Any) -> Self:
        """Other fields of the task: ``failurePolicy``, ``envProvider``, ``allowScaling``..."""
        self._task.update(fields)
        return self

    def annotations(self, annotations: dict[str, str]) -> Self:
        """Add annotations to the pod template's metadata."""
        self._task["template"].setdefault("metadata", {}).setdefault("annotations", {}).update(annotations)
        return self

    def annotation(self, key: str, value: str) -> Self:
        return self.annotations({key: value})

    def pod_spec(self, **spec: Any) -> Self:
        """Fields of the pod template's spec (``serviceAccountName``, ``nodeSelector``...)."""
        self._task["template"]["spec"].update(spec)
        return self

    def container(self, **fields: Any) -> Self:
        """Fields of the first container (``command``, ``resources``...)."""
        self._task["template"]["spec"]["containers"][0].update(fields)
        return self

    def command(self, *argv: str) -> Self:
        return self.container(command=list(argv))

    def obj(self) -> dict[str, Any]:
        return copy.deepcopy(self._task)


def task(type_: str = "none", name: str | None = None, replicas: int | None = None, **spec: Any) -> dict[str, Any]:
    """A task of type ``type_``; ``name`` and ``replicas`` when given, ``spec`` into its pod template's spec."""
    built = TaskBuilder(type_).pod_spec(**spec)
    if name is not None:
        built.name(name)
    if replicas is not None:
        built.replicas(replicas)
    return built.obj()


class DIJobBuilder(ObjectBuilder):
    """A DIJob manifest: ``DIJobBuilder("dqn").namespace("ns").task(task("learner")).spec(backoffLimit=2).obj()``.

    Without a task, ``obj()`` gives the job one learner. ``status`` is there once :meth:`status` was called.
    """

    def __init__(self, name: str = "job") -> None:
        super().__init__(name)
        self._spec: dict[str, Any] = {}
        self._tasks: list[dict[str, Any]] = []
        self._status: dict[str, Any] | None = None

    def task(self, *tasks: dict[str, Any] | TaskBuilder) -> Self:
        """More entries of ``spec.tasks``, in order."""
        self._tasks += [t.obj() if isinstance(t, TaskBuilder) else copy.deepcopy(t) for t in tasks]
        return self

    def spec(self, **fields: Any) -> Self:
        """Fields of the spec besides its tasks (``backoffLimit``, ``cleanPodPolicy``, ``maxReplicas``...)."""
        self._spec.update(fields)
        return self

    def status(self, **fields: Any) -> Self:
        if self._status is None:
            self._status = {}
        self._status.update(fields)
        return self

    def obj(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "DIJob",
            "metadata": self.metadata(),
            "spec": {**copy.deepcopy(self._spec), "tasks": copy.deepcopy(self._tasks) or [task("learner")]},
        }
        if self._status is not None:
            body["status"] = copy.deepcopy(self._status)
        return body


def job(*tasks: dict[str, Any], name: str = "job", **spec: Any) -> dict[str, Any]:
    """A DIJob named ``name`` with ``tasks`` (one learner when none) and the spec fields ``spec``."""
    return DIJobBuilder(name).task(*tasks).spec(**spec).obj()
