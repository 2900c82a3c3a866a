"""What a job's pods carry (pure): each task's pod template and each volume against core/v1, unique volume
names, and the container name dihera takes in every pod.

The CRD's schema keeps every field inside a pod template and a volume, so these are checked field by field
against core/v1 here (:mod:`dihera.podtemplate`), not by the schema. The env names, volumes and mount
path dihera adds to every pod are :mod:`dihera.reserved`'; the checkpoint volume's are
:mod:`dihera.validation.lifecycle`'.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from dihera.constants import PEER_WAIT_CONTAINER
from dihera.errors import Problem
from dihera.podtemplate import check_pod_template, check_volume
from dihera.validation.structure import obj

__all__ = ["reserved_container_problems", "template_problems", "volume_problems"]


def template_problems(tasks: list[object]) -> list[Problem]:
    """Each task's pod template against core/v1 (:func:`~dihera.podtemplate.check_pod_template`)."""
    problems: list[Problem] = []
    for i, task in enumerate(tasks):
        if isinstance(task, Mapping) and "template" in task:
            problems += check_pod_template(task["template"], f"spec.tasks[{i}].template")
    return problems


def volume_problems(volumes: list[object]) -> list[Problem]:
    """Each volume against core/v1, and volume names unique."""
    problems: list[Problem] = []
    named = [v for v in volumes if isinstance(v, Mapping) and isinstance(v.get("name"), str)]
    volume_names = Counter(v["name"] for v in named)
    for i, v in enumerate(volumes):
        problems += check_volume(v, f"spec.volumes[{i}]")
        if isinstance(v, Mapping) and any(v is n for n in named) and volume_names[v["name"]] > 1:
            problems.append(
                Problem(
                    f"spec.volumes[{i}].name",
                    f"{v.get('name')!r} is used by {volume_names[v.get('name')]} volumes; volume names must be unique",
                )
            )
    return problems


def reserved_container_problems(tasks: object) -> list[Problem]:
    """No user container or init container may take the name of dihera's own init container."""
    problems = []
    for i, task in enumerate(tasks if isinstance(tasks, list) else []):
        spec = obj(obj(obj(task).get("template")).get("spec"))
        for field in ("initContainers", "containers"):
            items = spec.get(field) if isinstance(spec, Mapping) else None
            problems += [
                Problem(
                    f"spec.tasks[{i}].template.spec.{field}[{j}].name",
                    f"{PEER_WAIT_CONTAINER!r} is the name of the init container dihera adds to every replica "
                    "(docs/rendering.md); choose another name",
                )
                for j, c in enumerate(items if isinstance(items, list) else [])
                if isinstance(c, Mapping) and c.get("name") == PEER_WAIT_CONTAINER
            ]
    return problems
