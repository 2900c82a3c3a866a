"""A job's progress from Argo's (pure): the Workflow's ``status.progress`` and, per task, the sum of
its live replicas' node progress.

Argo keeps ``N/M`` on every pod node: what the replica last self-reported through
``$ARGO_PROGRESS_FILE`` (docs/argo-ui.md), ``0/1`` while it reported nothing, ``M/M`` once it
succeeded; the Workflow's progress is the sum over all its pod nodes (retired replicas' included),
which is what the Argo UI's list shows.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from dihera.controller.decide.replicas import ReplicaState
from dihera.shapes.workflow import Workflow

__all__ = ["parse_progress", "task_progress", "workflow_progress"]

_PROGRESS = re.compile(r"^(\d+)/(\d+)$")


def parse_progress(text: object) -> tuple[int, int] | None:
    """``"3/10"`` → (3, 10); None for anything Argo would not accept (``N > M``, ``M`` of 0, not ``N/M``)."""
    return _parse(text) if isinstance(text, str) else None


@functools.lru_cache(maxsize=4096)  # a big job's 2,000 replicas report a few distinct values, every pass
def _parse(text: str) -> tuple[int, int] | None:
    match = _PROGRESS.match(text)
    if match is None:
        return None
    done, total = int(match.group(1)), int(match.group(2))
    return (done, total) if total > 0 and done <= total else None


def task_progress(states: Sequence[ReplicaState]) -> dict[str, str]:
    """Task → ``N/M`` summed over its replicas whose current node carries a valid progress."""
    sums: dict[str, tuple[int, int]] = {}
    for s in states:
        parsed = parse_progress(s.progress)
        if parsed is not None:
            done, total = sums.get(s.task, (0, 0))
            sums[s.task] = (done + parsed[0], total + parsed[1])
    return {task: f"{done}/{total}" for task, (done, total) in sums.items()}


def workflow_progress(workflow: Workflow | None) -> str | None:
    """The Workflow's ``status.progress`` when valid, else None."""
    value = ((workflow or {}).get("status") or {}).get("progress")
    return str(value) if parse_progress(value) is not None else None
