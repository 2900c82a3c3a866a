"""Who is in a job: every replica's rank, task and index, and the generation of that list (pure).

A replica keeps its rank and index for its whole life. The first membership ranks tasks in spec
order, then by index. Scaling up adds replicas at the lowest index free in their task and the
lowest rank no replica holds; scaling down removes the named replicas, by default the
highest-ranked of the task. No live replica's rank, index or FQDN ever changes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from dihera.model import DIJob

__all__ = ["Membership", "Replica", "initial_membership", "plan_membership"]


@dataclass(frozen=True, order=True)
class Replica:
    """One pod of a job: its global rank, its task and its index in the task."""

    rank: int
    task: str
    index: int


@dataclass(frozen=True)
class Membership:
    """The job's replicas in rank order, and a generation that grows with every change."""

    generation: int
    replicas: tuple[Replica, ...]

    def of_task(self, task: str) -> tuple[Replica, ...]:
        return tuple(r for r in self.replicas if r.task == task)

    def task_counts(self, tasks: Iterable[str] = ()) -> dict[str, int]:
        """Task → number of replicas; ``tasks`` first, in their order (0 when absent), then the others."""
        counts = dict.fromkeys(tasks, 0)
        for r in self.replicas:
            counts[r.task] = counts.get(r.task, 0) + 1
        return counts

    def to_json(self) -> str:
        """Canonical JSON (what the membership ConfigMap stores)."""
        return json.dumps(
            {
                "generation": self.generation,
                "replicas": [{"rank": r.rank, "task": r.task, "index": r.index} for r in self.replicas],
            },
            sort_keys=True,
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str) -> Membership:
        data: dict[str, Any] = json.loads(text)
        return cls(
            generation=int(data["generation"]),
            replicas=tuple(sorted(Replica(int(r["rank"]), str(r["task"]), int(r["index"])) for r in data["replicas"])),
        )


def initial_membership(job: DIJob) -> Membership:
    """Ranks in spec order of the tasks, then by index: DI-orchestrator's numbering."""
    replicas = []
    rank = 0
    for task in job.tasks:
        for index in range(task.replicas):
            replicas.append(Replica(rank, task.name, index))
            rank += 1
    return Membership(generation=1, replicas=tuple(replicas))


def _lowest_free(taken: set[int]) -> Iterator[int]:
    n = 0
    while True:
        if n not in taken:
            yield n
        n += 1


def plan_membership(job: DIJob, previous: Membership | None, remove: Iterable[tuple[str, int]] = ()) -> Membership:
    """The membership for ``job``'s replica counts, keeping every replica of ``previous`` it can.

    ``remove`` names replicas (task, index) to drop first when a task shrinks; any further
    shrinking drops the task's highest-ranked replicas.
    """
    if previous is None:
        return initial_membership(job)
    wanted = {t.name: t.replicas for t in job.tasks}
    named = set(remove)
    kept: list[Replica] = []
    for task in job.tasks:
        current = sorted(previous.of_task(task.name), key=lambda r: ((r.task, r.index) in named, r.rank))
        kept.extend(current[: wanted[task.name]])
    ranks = {r.rank for r in kept}
    free_rank = _lowest_free(ranks)
    added = []
    for task in job.tasks:
        have = [r for r in kept if r.task == task.name]
        free_index = _lowest_free({r.index for r in have})
        for _ in range(task.replicas - len(have)):
            added.append(Replica(next(free_rank), task.name, next(free_index)))
    replicas = tuple(sorted(kept + added))
    changed = replicas != previous.replicas
    return Membership(previous.generation + (1 if changed else 0), replicas)
