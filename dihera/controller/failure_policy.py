"""``spec.tasks[].failurePolicy`` (pure): which replicas leave the job, and when the job fails instead.

| failurePolicy     | a replica whose current attempt failed                                          |
|-------------------|---------------------------------------------------------------------------------|
| FailJob (default) | counts against the job's backoffLimit; past it the job is Failed (phase.py)     |
| DropReplica       | is retried up to backoffLimit times (Argo's retryStrategy, per replica); then   |
|                   | *dropped*: removed from the membership through ``JobScaler`` exactly as a       |
|                   | scale-down removes it, while its task keeps ≥ 1 replica and the job ≥           |
|                   | minReplicas. Past that bound the job is Failed, the message naming the bound.   |

The restarts of DropReplica tasks do not count against the job's backoffLimit (else a collector
that keeps crashing would fail the job before it could be dropped). ``status.droppedReplicas``
records every drop, with the replica's restarts, so the job's restart count keeps them once the
replica has left the Workflow. A drop is recorded in the status *before* the scale-down is applied
(as an ending is recorded before cleanPodPolicy): a pass that fails after the write drops the same
replica again on the next one, as long as the membership is the generation it was dropped from; a
replica recorded as dropped is never counted as a live replica.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dihera.controller.phase import describe_failure
from dihera.controller.replicas import ReplicaState

__all__ = ["DropPlan", "plan_drops", "restart_counts"]


@dataclass(frozen=True)
class DropPlan:
    """What the failure policies make of one observation.

    ``dropped``: ``status.droppedReplicas`` after it (the old entries, then the new ones);
    ``new``: the entries added now (one ReplicaDropped Event each);
    ``remove``: the dropped replicas still in the membership (the scale-down to apply);
    ``refused``: why the job fails instead (a drop would cross the bound), else None.
    """

    dropped: tuple[Mapping[str, Any], ...] = ()
    new: tuple[Mapping[str, Any], ...] = ()
    remove: tuple[str, ...] = ()
    refused: str | None = None

    @property
    def names(self) -> frozenset[str]:
        """The dropped replicas still in the membership: no longer counted as the job's replicas."""
        return frozenset(self.remove)


def _exhausted(state: ReplicaState, drop_tasks: Collection[str], backoff_limit: int) -> bool:
    return state.failed and state.task in drop_tasks and state.attempt >= backoff_limit


def _bound(task: str, left_in_task: int, left: int, min_replicas: int | None) -> str | None:
    """Why the job cannot lose one more replica of ``task``, or None."""
    if left_in_task < 1:
        return f"task {task!r} would have no replica left (a task keeps at least 1)"
    if min_replicas is not None and left < min_replicas:
        return f"the job would have {left} replica(s) left, below minReplicas {min_replicas}"
    return None


def plan_drops(
    states: Sequence[ReplicaState],
    drop_tasks: Collection[str],
    backoff_limit: int,
    min_replicas: int | None,
    old_dropped: Sequence[Mapping[str, Any]],
    generation: int | None,
    now: str,
) -> DropPlan:
    """Drop, in rank order, every replica of a DropReplica task that exhausted its retries, within the bound.

    ``states``: the live replicas of the membership of ``generation`` (retired ones left out);
    ``old_dropped``: ``status.droppedReplicas`` so far. An entry is still to be applied while the
    membership is the one it was dropped from (its ``generation``): once the scale-down committed a
    newer one, a replica of the same name is a new replica (an index reused after a resume). The
    first replica that cannot be dropped fails the job.
    """
    dropped = [dict(e) for e in old_dropped]
    pending = {str(e.get("replica")) for e in dropped if generation is not None and e.get("generation") == generation}
    left = [s for s in states if s.name not in pending] if pending else list(states)
    new: list[Mapping[str, Any]] = []
    refused = None
    for s in [s for s in left if _exhausted(s, drop_tasks, backoff_limit)]:
        in_task = sum(1 for x in left if x.task == s.task)
        why = _bound(s.task, in_task - 1, len(left) - 1, min_replicas)
        if why is not None:
            refused = (
                f"{describe_failure(s)} after {s.attempt} restart(s), its retries (backoffLimit {backoff_limit}) "
                f"exhausted; failurePolicy DropReplica cannot drop it: {why}"
            )
            break
        entry = {
            "replica": s.name,
            "rank": s.rank,
            "restarts": s.attempt,
            "message": f"{describe_failure(s)} after {s.attempt} restart(s)",
            "time": now,
        }
        if generation is not None:
            entry["generation"] = generation
        new.append(entry)
        dropped.append(entry)
        pending.add(s.name)
        left = [x for x in left if x.name != s.name]
    remove = tuple(s.name for s in states if s.name in pending) if pending else ()
    return DropPlan(tuple(dropped), tuple(new), remove, refused)


def restart_counts(
    states: Sequence[ReplicaState], plan: DropPlan, drop_tasks: Collection[str], old_restarts: int
) -> tuple[int, int]:
    """``(restarts, counted)``: the job's restarts (never decreasing; dropped replicas' included) and
    those that count against backoffLimit (the FailJob tasks')."""
    kept = [s for s in states if s.name not in plan.names] if plan.names else states
    dropped = sum(int(e.get("restarts") or 0) for e in plan.dropped)
    restarts = max(old_restarts, sum(s.attempt for s in kept) + dropped)
    tolerated = dropped + sum(s.attempt for s in kept if s.task in drop_tasks)
    return restarts, max(restarts - tolerated, 0)
