"""A validation rule: no ``none`` task before the DI-engine tasks whose roles come from node ids (pure).

Ranks follow the spec's order (docs/rendering.md), and ``ditask --platform k8s`` makes DI-engine's node
id the replica's ``DI_RANK``. DI-engine's stock distributed programs (``ding.example.dqn``,
``ding.example.ppo``) take a process's role from its node id: 0 learner, 1 evaluator, the others
collectors. A ``none`` task listed before the DI-engine tasks takes the low ranks, so every role shifts
(the learner's pod runs as an evaluator, nothing trains); with ``--topology star`` rank 0 is also the hub
every process dials, and a pod that does not run DI-engine there connects nobody.

So a ``none`` task may not precede a learner, evaluator or collector task whose containers run
``ditask`` without ``--labels`` (roles from node ids) or with ``--topology star``. Jobs whose containers
do not run ``ditask`` (``ding -m serial``, torch, TensorFlow...) are left alone, and so are ``--labels``
programs in a mesh (their roles do not depend on ranks).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from dihera.errors import Problem
from dihera.model import TaskType

__all__ = ["none_before_ditask_problems"]

_DI_ENGINE_TYPES = {TaskType.LEARNER.value, TaskType.EVALUATOR.value, TaskType.COLLECTOR.value}


def _command_lines(task: Mapping[str, object]) -> Iterator[list[str]]:
    """Each container's command and args as words (shell scripts split on whitespace)."""
    template = task.get("template")
    spec = template.get("spec") if isinstance(template, Mapping) else None
    containers = spec.get("containers") if isinstance(spec, Mapping) else None
    for c in containers if isinstance(containers, list) else []:
        if isinstance(c, Mapping):
            parts = [p for f in ("command", "args") if isinstance(c.get(f), list) for p in c[f]]
            yield [w for p in parts if isinstance(p, str) for w in p.split()]


def _ditask_reason(words: Sequence[str]) -> str | None:
    """Why a ``ditask`` command line depends on ranks, or None (no ditask, or roles from --labels in a mesh)."""
    starts = [i for i, w in enumerate(words) if w.rsplit("/", 1)[-1] == "ditask"]
    if not starts:
        return None
    flags = words[starts[0] + 1 :]
    star = any(
        w == "--topology=star" or (w == "--topology" and flags[i + 1 : i + 2] == ["star"]) for i, w in enumerate(flags)
    )
    if star:
        return "runs `ditask --topology star`, whose rank 0 is the hub every process dials"
    if not any(w == "--labels" or w.startswith("--labels=") for w in flags):
        return (
            "runs `ditask` without --labels: DI-engine's stock programs take the role from the node id, "
            "which is DI_RANK (0 learner, 1 evaluator, others collectors)"
        )
    return None


def _rank_dependence(task: Mapping[str, object]) -> str | None:
    """Why a DI-engine task's program depends on its replicas' ranks, or None."""
    if not isinstance(task.get("type"), str) or task["type"] not in _DI_ENGINE_TYPES:
        return None
    return next((r for words in _command_lines(task) if (r := _ditask_reason(words))), None)


def _label(task: Mapping[str, object]) -> str:
    return repr(task.get("name") or task.get("type"))


def none_before_ditask_problems(tasks: Sequence[Any]) -> list[Problem]:
    """One problem per ``none`` task listed before a DI-engine task whose program depends on ranks,
    naming the first such task after it."""
    problems = []
    entries = [t if isinstance(t, Mapping) else {} for t in tasks]
    for i, task in enumerate(entries):
        if task.get("type") != TaskType.NONE.value:
            continue
        later = ((j, t, r) for j, t in enumerate(entries[i + 1 :], i + 1) if (r := _rank_dependence(t)))
        if (found := next(later, None)) is None:
            continue
        j, shifted, reason = found
        problems.append(
            Problem(
                f"spec.tasks[{i}]",
                f"the none task {_label(task)} is listed before the DI-engine task {_label(shifted)} "
                f"(spec.tasks[{j}]), which {reason}; ranks follow the spec's order, so it would shift the "
                "DI-engine roles: list none tasks after the DI-engine tasks",
            )
        )
    return problems
