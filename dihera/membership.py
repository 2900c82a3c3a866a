"""Who is in a job: every replica's rank, task and index, and the generation of that list (pure).

A replica keeps its rank and index for its whole life. The first membership ranks tasks in spec
order, then by index. A membership planned for a Workflow about to be created (:func:`plan_membership`:
every replica then starts with the same ``DI_NODES``) adds replicas at the lowest index free in their
task and the lowest rank no replica holds; a running job's scale-up (:mod:`dihera.scaling.plan`) puts them
above every live replica (:func:`ranks_after`). Scaling down removes the named replicas, by default the
highest-ranked of the task. No live replica's rank, index or FQDN ever changes.

A replica's pod hostname is decided when it joins, for its whole life: the long ``<job>-<task>-<index>``
while the membership's bare hostnames fit in one environment string, else the short ``<task>-<index>``
(:func:`assign_hostnames`; docs/rendering.md, "Names in the node lists").
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import NotRequired, TypedDict, cast

from dihera.constants import (
    ENV_STRING_MARGIN,
    MAX_ENV_STRING,
    TF_ENTRY_EXTRA,
    TF_ROLE_EXTRA,
    VACANT_RANK_ADDRESS,
)
from dihera.model import DIJob
from dihera.naming import replica_hostname

__all__ = ["Membership", "Replica", "assign_hostnames", "initial_membership", "plan_membership", "ranks_after"]

#: The longest membership ConfigMap value that still becomes an environment string Linux execs
#: (:data:`dihera.env_limits.MAX_VALUE_BYTES`).
_MAX_VALUE_BYTES = MAX_ENV_STRING - ENV_STRING_MARGIN


@dataclass(frozen=True, order=True)
class Replica:
    """One pod of a job: its global rank, its task and its index in the task, and whether its pod
    has a short hostname (``<task>-<index>``, :func:`~dihera.naming.short_hostname`)."""

    rank: int
    task: str
    index: int
    short: bool = False

    def hostname(self, job: str) -> str:
        """The replica's pod hostname in job ``job``."""
        return replica_hostname(job, self.task, self.index, self.short)


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
                "replicas": [_replica_json(r) for r in self.replicas],
            },
            sort_keys=True,
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str) -> Membership:
        data = cast(_MembershipJson, json.loads(text))  # checked below: int(), str() and KeyError
        return cls(
            generation=int(data["generation"]),
            replicas=tuple(
                sorted(
                    Replica(int(r["rank"]), str(r["task"]), int(r["index"]), r.get("short") is True)
                    for r in data["replicas"]
                )
            ),
        )


class _ReplicaJson(TypedDict):
    rank: int
    task: str
    index: int
    short: NotRequired[bool]


class _MembershipJson(TypedDict):
    """``membership.json``, the membership ConfigMap's key the replicas read."""

    generation: int
    replicas: list[_ReplicaJson]


def _replica_json(r: Replica) -> _ReplicaJson:
    """A replica in ``membership.json``; ``short`` only when true, so memberships without short
    hostnames keep the JSON they always had."""
    out: _ReplicaJson = {"rank": r.rank, "task": r.task, "index": r.index}
    if r.short:
        out["short"] = True
    return out


def _list_sizes(job: DIJob, replicas: Sequence[Replica]) -> tuple[int, int]:
    """Bytes of ``DI_NODES`` (bare hostnames, vacant ranks included) and of the TensorFlow cluster
    list (as :func:`dihera.env_limits.membership_env_bound` counts it; 0 without TensorFlow tasks)."""
    tf_tasks = {t.name for t in job.tasks if t.env_provider is not None and t.env_provider.name == "tensorflow"}
    top = max((r.rank for r in replicas), default=-1)
    nodes = sum(len(r.hostname(job.name).encode()) for r in replicas)
    nodes += (top + 1 - len(replicas)) * len(VACANT_RANK_ADDRESS) + max(top, 0)
    tf_replicas = [r for r in replicas if r.task in tf_tasks]
    tf = sum(len(r.hostname(job.name).encode()) + TF_ENTRY_EXTRA + 1 for r in tf_replicas)
    tf = max(tf - 1, 0) + TF_ROLE_EXTRA * len({r.task for r in tf_replicas})
    return nodes, tf


def assign_hostnames(job: DIJob, kept: Sequence[Replica], added: Sequence[Replica]) -> list[Replica]:
    """``added`` (replicas joining a membership that keeps ``kept``), each with its hostname decided.

    A joining replica gets a long hostname while the membership's bare hostnames still fit in one
    environment string (``DI_NODES``, and TensorFlow's cluster list), lowest rank first; the others
    a short one. Index 0 is always long (``MASTER_ADDR`` and ``DMLC_PS_ROOT_URI`` name it). Kept
    replicas keep theirs. When even short names do not fit, the caller refuses the membership
    (:func:`dihera.env_limits.nodes_bytes`; validation's bound).
    """
    out = [replace(r, short=r.index != 0) for r in added]
    tf_tasks = {t.name for t in job.tasks if t.env_provider is not None and t.env_provider.name == "tensorflow"}
    nodes, tf = _list_sizes(job, [*kept, *out])
    for i in sorted(range(len(out)), key=lambda i: out[i].rank):
        r = out[i]
        if not r.short:
            continue
        longer = replace(r, short=False)
        delta = len(longer.hostname(job.name).encode()) - len(r.hostname(job.name).encode())
        tf_delta = delta if r.task in tf_tasks else 0
        if nodes + delta <= _MAX_VALUE_BYTES and tf + tf_delta <= _MAX_VALUE_BYTES:
            out[i] = longer
            nodes, tf = nodes + delta, tf + tf_delta
    return out


def initial_membership(job: DIJob) -> Membership:
    """Ranks in spec order of the tasks, then by index: DI-orchestrator's numbering."""
    replicas = []
    rank = 0
    for task in job.tasks:
        for index in range(task.replicas):
            replicas.append(Replica(rank, task.name, index))
            rank += 1
    return Membership(generation=1, replicas=tuple(assign_hostnames(job, (), replicas)))


def _lowest_free(taken: set[int]) -> Iterator[int]:
    n = 0
    while True:
        if n not in taken:
            yield n
        n += 1


def ranks_after(kept: Iterable[Replica]) -> Iterator[int]:
    """The ranks for replicas joining ``kept``: from one above the highest kept rank, upwards.

    A rank left vacant in the middle is never refilled: DI-engine's mesh has rank r dial the r lower ranks
    at start and never again, and the replicas above a vacancy hold the departed replica's name there
    (names are never reused), so they would never dial a newcomer put in it. At the end, the newcomer dials
    every live replica itself. A vacancy at the end (no live replica above it) is reused.
    """
    return itertools.count(max((r.rank for r in kept), default=-1) + 1)


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
    free_rank = _lowest_free({r.rank for r in kept})
    added = []
    for task in job.tasks:
        have = [r for r in kept if r.task == task.name]
        free_index = _lowest_free({r.index for r in have})
        for _ in range(task.replicas - len(have)):
            added.append(Replica(next(free_rank), task.name, next(free_index)))
    replicas = tuple(sorted(kept + assign_hostnames(job, kept, added)))
    changed = replicas != previous.replicas
    return Membership(previous.generation + (1 if changed else 0), replicas)
