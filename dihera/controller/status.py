"""The DIJob status from what was observed (pure): observed Workflow + pods + old status + now → new status.

Nothing here reads the clock or the cluster; :mod:`dihera.controller.reconcile` does both and
writes the result only when :attr:`StatusUpdate.changed`. Once a job is Succeeded or Failed its
status is final: later observations (pods being cleaned up) do not rewrite it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dihera.constants import (
    EVENT_NORMAL,
    EVENT_WARNING,
    TERMINAL_PHASES,
    WARNING_PHASES,
    EventReason,
    Phase,
    condition_reason,
)
from dihera.controller.conditions import set_phase_condition
from dihera.controller.deadlines import seconds_left
from dihera.controller.failure_policy import DropPlan, plan_drops, restart_counts
from dihera.controller.phase import PhaseDecision, PhaseInputs, decide_phase
from dihera.controller.progress import task_progress, workflow_progress
from dihera.controller.replicas import ReplicaState, replica_states
from dihera.controller.suspend import HELD_PHASES
from dihera.membership import Membership
from dihera.model import SuccessPolicy
from dihera.patches import precondition
from dihera.scaling.dag import live_replicas

__all__ = [
    "OWN_FIELDS",
    "PROGRESS_FIELDS",
    "TERMINAL",
    "Event",
    "Observation",
    "StatusUpdate",
    "compute_status",
    "progress_only",
    "status_patch",
    "stuck_replicas",
    "task_status",
]

TERMINAL = TERMINAL_PHASES
#: The status fields the controller writes; every other one (``profilings``: the di-server's) is left alone.
OWN_FIELDS = (
    "phase",
    "conditions",
    "replicas",
    "readyReplicas",
    "taskStatus",
    "restarts",
    "reschedules",
    "observedGeneration",
    "workflowName",
    "membershipGeneration",
    "completionTimestamp",
    "startTime",
    "stuckReplicas",
    "droppedReplicas",
    "progress",
    "taskProgress",
)

#: The status fields a pass recomputes from what it observes alone (pod counts, Argo's node progress):
#: a write that changes only these reports progress, and a later one writes the then-current values.
PROGRESS_FIELDS = frozenset({"readyReplicas", "taskStatus", "progress", "taskProgress"})
#: What may differ in a condition when only progress changed (a Pending message counts the pods created).
_CONDITION_PROGRESS = frozenset({"message", "lastUpdateTime"})


@dataclass(frozen=True)
class Observation:
    """Everything one reconcile read about a job. ``membership`` is None only for an invalid job.

    ``generation``: the DIJob generation the status describes (``observedGeneration``): the one read,
    or the one observed before when a hand edit of the replicas could not be acted on yet.
    ``foreign_workflow``: a Workflow with the job's name exists but another (deleted) DIJob owns it.
    ``scale_refused``: why a hand edit of ``spec.tasks[].replicas`` was refused (posted as a Warning; the
    reconciler sets it only the first time a refusal is seen, so it is one Event).
    ``success_policy`` and ``active_deadline_seconds``: the job's (None: not set).
    ``drop_tasks`` and ``min_replicas``: the job's tasks with failurePolicy DropReplica, its minReplicas.
    ``suspended``: the Suspended phase's message while ``spec.suspend`` holds the job (or a resume
    waits for the old run to go), or the Queued phase's while Kueue has not admitted the job (see
    ``held_phase``), else None (:mod:`dihera.controller.suspend`).
    """

    name: str
    generation: int
    membership: Membership | None
    backoff_limit: int
    workflow: Mapping[str, Any] | None
    pods: Sequence[Mapping[str, Any]] = ()
    invalid: str | None = None
    foreign_workflow: bool = False
    scale_refused: str | None = None
    success_policy: SuccessPolicy | None = None
    active_deadline_seconds: int | None = None
    drop_tasks: frozenset[str] = frozenset()
    min_replicas: int | None = None
    suspended: str | None = None
    #: The phase ``suspended`` holds the job in: Suspended, or Queued (Kueue; docs/queueing.md).
    held_phase: Phase = Phase.SUSPENDED
    #: The Event reason of entering ``held_phase`` (None: ``Job<Phase>``).
    held_cause: str | None = None


@dataclass(frozen=True)
class Event:
    """A Kubernetes Event to post about the job once its status is written."""

    type: str
    reason: str
    message: str


@dataclass(frozen=True)
class StatusUpdate:
    status: dict[str, Any]
    changed: bool
    events: tuple[Event, ...] = ()
    restarts_added: int = 0
    states: tuple[ReplicaState, ...] = field(default=(), compare=False)
    #: Seconds until a time-based decision (activeDeadlineSeconds) is due: reconcile again then.
    wakeup: float | None = None
    #: Replicas a failure policy dropped that are still in the membership: the scale-down to apply
    #: after the status write (names ``<task>-<index>``).
    drops: tuple[str, ...] = ()


def task_status(states: Sequence[ReplicaState]) -> dict[str, dict[str, int]]:
    """Task → pod phase → count, over each replica's current attempt (replicas without a pod are left out)."""
    out: dict[str, dict[str, int]] = {}
    for s in states:
        if s.pod_phase is not None:
            phases = out.setdefault(s.task, {})
            phases[s.pod_phase] = phases.get(s.pod_phase, 0) + 1
    return out


def stuck_replicas(states: Sequence[ReplicaState]) -> list[dict[str, str]]:
    """``status.stuckReplicas``: every replica whose current pod is stuck, in rank order."""
    out = []
    for s in states:
        if s.problem is not None:
            entry = {"replica": s.name, "reason": s.problem[0], "message": s.problem[1]}
            if s.pod_name:
                entry["pod"] = s.pod_name
            out.append(entry)
    return out


def _describe_stuck(entry: Mapping[str, str]) -> str:
    pod = f" (pod {entry['pod']})" if entry.get("pod") else ""
    return f"replica {entry['replica']}{pod} is {entry['reason']}: {entry['message']}"


def _deadline(seconds: int | None, start: str, now: str) -> tuple[float | None, int | None]:
    """``(seconds left, None)`` before ``activeDeadlineSeconds``, ``(None, seconds)`` once past it."""
    left = seconds_left(start, seconds, now)
    if left is None:
        return None, None
    return (left, None) if left > 0 else (None, seconds)


def _with_stuck(decision: PhaseDecision, stuck: Sequence[Mapping[str, str]]) -> PhaseDecision:
    """The phase message followed by why replicas are stuck."""
    if not stuck:
        return decision
    why = "; ".join(_describe_stuck(e) for e in stuck)
    return PhaseDecision(decision.phase, f"{decision.message}; {why}", decision.cause)


def _with_dropped(decision: PhaseDecision, dropped: Sequence[Mapping[str, Any]]) -> PhaseDecision:
    """A running job's phase message followed by the replicas it goes on without."""
    if not dropped or decision.phase in TERMINAL:
        return decision
    who = ", ".join(f"{e['replica']} (rank {e['rank']})" for e in dropped)
    return PhaseDecision(
        decision.phase,
        f"{decision.message}; {len(dropped)} replica(s) dropped by failurePolicy DropReplica: {who}",
        decision.cause,
    )


def _drop_events(plan: DropPlan, kept: Sequence[ReplicaState]) -> list[Event]:
    counts: dict[str, int] = {}
    for s in kept:
        counts[s.task] = counts.get(s.task, 0) + 1
    left = f"{len(kept)} replicas left ({', '.join(f'{t} {n}' for t, n in counts.items())})"
    return [
        Event(
            EVENT_WARNING,
            EventReason.REPLICA_DROPPED,
            f"{e['message']}; dropped from the job (failurePolicy DropReplica), {left}",
        )
        for e in plan.new
    ]


def _stuck_events(old: Mapping[str, Any], stuck: Sequence[Mapping[str, str]]) -> list[Event]:
    """One ReplicaStuck Warning per replica and reason not already in the old status."""
    seen = {(e.get("replica"), e.get("reason")) for e in old.get("stuckReplicas") or []}
    return [
        Event(EVENT_WARNING, EventReason.REPLICA_STUCK, _describe_stuck(e))
        for e in stuck
        if (e["replica"], e["reason"]) not in seen
    ]


def _membership_event(membership: Membership) -> Event:
    tasks = ", ".join(f"{task} {n}" for task, n in membership.task_counts().items())
    return Event(
        EVENT_NORMAL,
        EventReason.REPLICAS_CHANGED,
        f"membership generation {membership.generation}: {len(membership.replicas)} replicas ({tasks})",
    )


def _events(
    obs: Observation,
    old: Mapping[str, Any],
    decision: PhaseDecision,
    restarts_added: int,
    states: Sequence[ReplicaState],
    live: Membership | None,
    stuck: Sequence[Mapping[str, str]],
) -> list[Event]:
    events = _stuck_events(old, stuck)
    if obs.scale_refused:
        events.append(Event(EVENT_WARNING, EventReason.SCALE_REFUSED, obs.scale_refused))
    old_mg = old.get("membershipGeneration")
    if live is not None and old_mg is not None and live.generation > int(old_mg):
        events.append(_membership_event(live))
    if restarts_added > 0:
        again = ", ".join(
            f"{s.name} (retry {s.attempt}, rank {s.rank}, hostname {s.hostname})" for s in states if s.attempt > 0
        )
        events.append(Event(EVENT_WARNING, EventReason.REPLICA_RESTARTED, f"restarted in place: {again}"))
    if decision.phase != old.get("phase"):
        kind = EVENT_WARNING if decision.phase in WARNING_PHASES else EVENT_NORMAL
        events.append(Event(kind, decision.cause or condition_reason(decision.phase), decision.message))
    return events


@dataclass(frozen=True)
class _Replicas:
    """The replicas one observation shows: the live membership, every replica's state, the failure
    policies' drops, the replicas still the job's (``kept``), and the restart counts."""

    live: Membership | None
    states: tuple[ReplicaState, ...]
    drops: DropPlan
    kept: tuple[ReplicaState, ...]
    restarts: int
    counted: int


def _replicas(obs: Observation, old: Mapping[str, Any], now: str) -> _Replicas:
    ours = None if obs.foreign_workflow else obs.workflow
    live = live_replicas(obs.membership, ours) if obs.membership else None
    states = replica_states(obs.name, obs.membership, ours, obs.pods) if obs.membership else ()
    dropped = old.get("droppedReplicas") or ()
    generation = live.generation if live else None
    drops = plan_drops(states, obs.drop_tasks, obs.backoff_limit, obs.min_replicas, dropped, generation, now)
    kept = tuple(s for s in states if s.name not in drops.names) if drops.names else states
    restarts, counted = restart_counts(states, drops, obs.drop_tasks, int(old.get("restarts") or 0))
    return _Replicas(live, states, drops, kept, restarts, counted)


def _decide(
    obs: Observation, old: Mapping[str, Any], seen: _Replicas, wf_name: str, start: str, now: str
) -> tuple[PhaseDecision, float | None]:
    """The phase (its message with stuck and dropped replicas) and the seconds left before the deadline."""
    old_mg = old.get("membershipGeneration")
    grew = seen.live is not None and old_mg is not None and seen.live.generation > int(old_mg)
    deadline_left, passed = _deadline(None if obs.suspended else obs.active_deadline_seconds, start, now)
    decision = decide_phase(
        PhaseInputs(
            states=seen.kept,
            workflow=obs.workflow,
            backoff_limit=obs.backoff_limit,
            restarts=seen.counted,
            workflow_existed=bool(old.get("workflowName")),
            workflow_name=wf_name or obs.name,
            rescheduling=grew or old.get("phase") == Phase.RESCHEDULING,
            invalid=obs.invalid,
            foreign_workflow=obs.foreign_workflow,
            success_policy=obs.success_policy,
            deadline_passed=passed,
            suspended=obs.suspended,
            held_phase=obs.held_phase,
            held_cause=obs.held_cause,
            drop_tasks=obs.drop_tasks,
            drop_refused=seen.drops.refused,
        )
    )
    return decision, deadline_left


def compute_status(obs: Observation, old: Mapping[str, Any] | None, now: str) -> StatusUpdate:
    """The new status of a job; ``now`` is an RFC 3339 timestamp (``2026-01-02T03:04:05Z``)."""
    old = dict(old or {})
    if old.get("phase") in TERMINAL:
        return StatusUpdate(old, changed=False)
    seen = _replicas(obs, old, now)
    kept, old_mg = seen.kept, old.get("membershipGeneration")
    new_mg = seen.live.generation if seen.live else old_mg
    # every committed membership change (scale-up or down, server or spec edit) is one reschedule
    changes = max(int(new_mg) - int(old_mg), 0) if old_mg is not None and new_mg is not None else 0
    ours = None if obs.foreign_workflow else obs.workflow
    wf_name = ours["metadata"]["name"] if ours is not None else old.get("workflowName") or ""
    resumed = old.get("phase") in HELD_PHASES and obs.suspended is None
    start = now if resumed or not old.get("startTime") else str(old["startTime"])
    decision, deadline_left = _decide(obs, old, seen, wf_name, start, now)
    stuck = stuck_replicas(kept) if decision.phase not in (Phase.SUCCEEDED, *HELD_PHASES) else []
    decision = _with_dropped(_with_stuck(decision, stuck), seen.drops.dropped)
    status: dict[str, Any] = {
        "phase": decision.phase.value,
        "conditions": set_phase_condition(old.get("conditions") or [], decision.phase, decision.message, now),
        "replicas": len(kept),
        "readyReplicas": sum(1 for s in kept if s.ready),
        "taskStatus": task_status(kept),
        "restarts": seen.restarts,
        "reschedules": int(old.get("reschedules") or 0) + changes,
        "observedGeneration": obs.generation,
        "startTime": start,
    }
    optional = {
        "stuckReplicas": stuck or None,
        "droppedReplicas": [dict(e) for e in seen.drops.dropped] or None,
        "profilings": old.get("profilings"),
        "workflowName": wf_name or None,
        "membershipGeneration": new_mg,
        "completionTimestamp": now if decision.phase in TERMINAL else None,
        "progress": workflow_progress(ours),
        "taskProgress": task_progress(kept) or None,
    }
    status.update({k: v for k, v in optional.items() if v is not None})
    added = seen.restarts - int(old.get("restarts") or 0)
    # every event but ScaleRefused follows a change of the status; the reconciler passes a refusal once
    events = _drop_events(seen.drops, kept) + _events(obs, old, decision, added, seen.states, seen.live, stuck)
    active = decision.phase not in TERMINAL and decision.phase not in HELD_PHASES
    wakeup = deadline_left if decision.phase not in TERMINAL else None
    drops = seen.drops.remove if active else ()
    return StatusUpdate(status, status != old, tuple(events), added, kept, wakeup, drops)


def progress_only(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether ``new`` differs from ``old`` in progress only: :data:`PROGRESS_FIELDS`, and the message
    of a condition (with its ``lastUpdateTime``). False when the phase or anything else changed."""
    if not old or old.get("phase") != new.get("phase"):
        return False
    for key in old.keys() | new.keys():
        if key in PROGRESS_FIELDS or old.get(key) == new.get(key):
            continue
        if key != "conditions" or not _same_conditions(old.get(key) or [], new.get(key) or []):
            return False
    return True


def _same_conditions(old: Sequence[Mapping[str, Any]], new: Sequence[Mapping[str, Any]]) -> bool:
    """The same conditions but for their messages (and when those were written)."""

    def bare(conds: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        return [{k: v for k, v in c.items() if k not in _CONDITION_PROGRESS} for c in conds]

    return bare(old) == bare(new)


def status_patch(body: Mapping[str, Any], status: Mapping[str, Any]) -> list[dict[str, Any]]:
    """JSON patch writing the controller's fields of ``status`` over the DIJob ``body`` was read as.

    Only :data:`OWN_FIELDS` that changed are written (``add`` replaces a whole value; a field gone is
    removed), so a field another writer owns, or wrote since ``body`` was read, is never touched. A
    job without a status yet gets one created under a resourceVersion precondition (another writer may
    have created it meanwhile: then the API server answers 409 and the pass reads again). Later writes
    carry no precondition, so the di-server's profilings writes never make them fail; a watch cache
    behind the API server cannot make them undo a newer status either (docs/controller.md).
    """
    old = body.get("status")
    ops: list[dict[str, Any]] = []
    if old is None:
        ops.append(precondition(body))
        ops.append({"op": "add", "path": "/status", "value": {}})
        old = {}
    for name in OWN_FIELDS:
        if name in status and status[name] != old.get(name):
            ops.append({"op": "add", "path": f"/status/{name}", "value": status[name]})
        elif name not in status and name in old:
            ops.append({"op": "remove", "path": f"/status/{name}"})
    return ops
