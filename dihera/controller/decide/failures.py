"""Failed replicas (pure), the whole concern: ``backoffLimit``, ``spec.tasks[].failurePolicy``, restarts.

A replica's pod that fails is restarted in place by Argo (the Workflow's retryStrategy, rendered with
``backoffLimit`` retries per replica: :mod:`dihera.render.workflow`), with the same rank and FQDN; the
controller sees each attempt as a node ``<task>-<index>(k)`` and its pod
(:mod:`~dihera.controller.decide.replicas`). This module decides what the failures mean for the job:
the restart counts (:func:`restart_counts`), the drops of ``failurePolicy: DropReplica``
(:func:`plan_drops`), the phase policies in their order in :data:`dihera.controller.decide.phase.POLICIES`
(:func:`drop_bound_reached`, :func:`backoff_exceeded`, :func:`retries_exhausted`, :func:`replica_failed`,
:func:`retry_not_up`) and the Events (:func:`failure_events`).

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

from collections.abc import Collection, Sequence

from dihera.constants import EVENT_WARNING, EventReason, Phase, StuckReason
from dihera.controller.decide.decision import Event, PhaseDecision
from dihera.controller.decide.records import DropPlan, Facts
from dihera.controller.decide.replicas import ReplicaState
from dihera.shapes.dijob import DroppedReplica

__all__ = [
    "FAILURES_NAMED",
    "DropPlan",
    "backoff_exceeded",
    "describe_failure",
    "describe_failures",
    "drop_bound_reached",
    "drop_events",
    "plan_drops",
    "replica_failed",
    "restart_counts",
    "restart_events",
    "retries_exhausted",
    "retry_not_up",
]

#: Failed replicas named in a message; more are counted ("and 1,995 more"), so a 2,000-replica job's
#: status message and Event stay short.
FAILURES_NAMED = 5


def describe_failure(state: ReplicaState) -> str:
    """``replica collector-1 (rank 3, pod p) failed with exit code 3``, with what is known."""
    where = f"rank {state.rank}" + (f", pod {state.pod_name}" if state.pod_name else "")
    code = state.exit_code if state.failed else state.last_failure_code
    oom = " (OOMKilled)" if state.problem is not None and state.problem[0] == StuckReason.OOM_KILLED else ""
    if code:
        how = f"failed with exit code {code}{oom}"
    elif state.node_message:
        how = f"failed: {state.node_message}"
    else:
        how = "failed"
    why = f" ({state.failure_reason})" if state.failure_reason else ""
    return f"replica {state.name} ({where}) {how}{why}"


def describe_failures(states: Sequence[ReplicaState]) -> str:
    """The first :data:`FAILURES_NAMED` failures described, ``; and N more`` for the rest."""
    named = "; ".join(describe_failure(s) for s in states[:FAILURES_NAMED])
    more = len(states) - FAILURES_NAMED
    return f"{named}; and {more:,} more" if more > 0 else named


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
    old_dropped: Sequence[DroppedReplica],
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
    dropped = [e.copy() for e in old_dropped]
    pending = {str(e.get("replica")) for e in dropped if generation is not None and e.get("generation") == generation}
    new, refused = _drop_in_order(states, pending, drop_tasks, backoff_limit, min_replicas, generation, now)
    pending |= {str(e["replica"]) for e in new}
    remove = tuple(s.name for s in states if s.name in pending) if pending else ()
    return DropPlan((*dropped, *new), tuple(new), remove, refused)


def _drop_in_order(
    states: Sequence[ReplicaState],
    pending: Collection[str],
    drop_tasks: Collection[str],
    backoff_limit: int,
    min_replicas: int | None,
    generation: int | None,
    now: str,
) -> tuple[list[DroppedReplica], str | None]:
    """The entries of the replicas dropped now (``pending``: dropped already), and why the first that
    could not be dropped fails the job (None: every exhausted replica was dropped)."""
    left = [s for s in states if s.name not in pending]
    new: list[DroppedReplica] = []
    for s in [s for s in left if _exhausted(s, drop_tasks, backoff_limit)]:
        in_task = sum(1 for x in left if x.task == s.task)
        why = _bound(s.task, in_task - 1, len(left) - 1, min_replicas)
        if why is not None:
            return new, _refusal(s, backoff_limit, why)
        new.append(_drop_entry(s, generation, now))
        left = [x for x in left if x.name != s.name]
    return new, None


def _refusal(s: ReplicaState, backoff_limit: int, why: str) -> str:
    return (
        f"{describe_failure(s)} after {s.attempt} restart(s), its retries (backoffLimit {backoff_limit}) "
        f"exhausted; failurePolicy DropReplica cannot drop it: {why}"
    )


def _drop_entry(s: ReplicaState, generation: int | None, now: str) -> DroppedReplica:
    """``status.droppedReplicas[]`` of a replica dropped now (from the membership of ``generation``)."""
    entry: DroppedReplica = {
        "replica": s.name,
        "rank": s.rank,
        "restarts": s.attempt,
        "message": f"{describe_failure(s)} after {s.attempt} restart(s)",
        "time": now,
    }
    if generation is not None:
        entry["generation"] = generation
    return entry


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


# -- the phase policies (their order: dihera.controller.decide.phase.POLICIES)


def drop_bound_reached(f: Facts) -> PhaseDecision | None:
    """A DropReplica replica exhausted its retries and dropping it would cross the bound → Failed."""
    if f.drops.refused is None:
        return None
    return PhaseDecision(Phase.FAILED, f.drops.refused, EventReason.DROP_BOUND_REACHED)


def backoff_exceeded(f: Facts) -> PhaseDecision | None:
    """Restarts of FailJob tasks beyond backoffLimit → Failed."""
    if f.counted <= f.backoff_limit:
        return None
    counted = [s for s in f.kept if s.task not in f.drop_tasks]
    who = describe_failures([s for s in counted if s.failed or s.attempt > 0])
    return PhaseDecision(
        Phase.FAILED,
        f"{f.counted} restarts exceed backoffLimit {f.backoff_limit}: {who}",
        EventReason.BACKOFF_LIMIT_EXCEEDED,
    )


def retries_exhausted(f: Facts) -> PhaseDecision | None:
    """A replica's current attempt failed with no retry left → Failed."""
    exhausted = [
        s
        for s in f.failed
        if s.attempt >= f.backoff_limit or (s.task not in f.drop_tasks and f.counted >= f.backoff_limit)
    ]
    if not exhausted:
        return None
    return PhaseDecision(
        Phase.FAILED,
        f"{describe_failures(exhausted)} after {f.counted} restart(s); backoffLimit {f.backoff_limit} reached",
        EventReason.BACKOFF_LIMIT_EXCEEDED,
    )


def replica_failed(f: Facts) -> PhaseDecision | None:
    """A replica failed and will be retried → Restarting."""
    if not f.failed:
        return None
    s = f.failed[0]
    return PhaseDecision(
        Phase.RESTARTING,
        f"{describe_failure(s)}; restarting it in place as retry {s.attempt + 1} (same rank and FQDN)",
    )


def retry_not_up(f: Facts) -> PhaseDecision | None:
    """A retry's pod is not up yet → Restarting."""
    retrying = [s.name for s in f.kept if s.attempt > 0 and not s.up]
    if not retrying:
        return None
    return PhaseDecision(Phase.RESTARTING, f"restarting {', '.join(retrying)} in place (same rank and FQDN)")


# -- Events


def drop_events(f: Facts) -> list[Event]:
    """One ReplicaDropped Warning per replica dropped now."""
    counts: dict[str, int] = {}
    for s in f.kept:
        counts[s.task] = counts.get(s.task, 0) + 1
    left = f"{len(f.kept)} replicas left ({', '.join(f'{t} {n}' for t, n in counts.items())})"
    return [
        Event(
            EVENT_WARNING,
            EventReason.REPLICA_DROPPED,
            f"{e['message']}; dropped from the job (failurePolicy DropReplica), {left}",
        )
        for e in f.drops.new
    ]


def restart_events(f: Facts) -> list[Event]:
    """One ReplicaRestarted Warning naming every restarted replica when restarts were seen now."""
    if f.restarts <= int(f.view.status.get("restarts") or 0):
        return []
    again = ", ".join(
        f"{s.name} (retry {s.attempt}, rank {s.rank}, hostname {s.hostname})" for s in f.states if s.attempt > 0
    )
    return [Event(EVENT_WARNING, EventReason.REPLICA_RESTARTED, f"restarted in place: {again}")]
