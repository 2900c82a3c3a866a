"""The DIJob status from what was observed (pure): observed Workflow + pods + old status + now → new status.

Nothing here reads the clock or the cluster; :mod:`dihera.controller.reconcile` does both and
writes the result only when :attr:`StatusUpdate.changed`. Once a job is Succeeded or Failed its
status is final: later observations (pods being cleaned up) do not rewrite it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dihera.controller.conditions import reason_of, set_phase_condition
from dihera.controller.phase import PhaseDecision, decide_phase
from dihera.controller.replicas import ReplicaState, replica_states
from dihera.membership import Membership

__all__ = ["TERMINAL", "Event", "Observation", "StatusUpdate", "compute_status", "task_status"]

TERMINAL = frozenset({"Succeeded", "Failed"})
_WARNING_PHASES = frozenset({"Failed", "Restarting"})


@dataclass(frozen=True)
class Observation:
    """Everything one reconcile read about a job. ``membership`` is None only for an invalid job.

    ``foreign_workflow``: a Workflow with the job's name exists but another (deleted) DIJob owns it.
    """

    name: str
    generation: int
    membership: Membership | None
    backoff_limit: int
    workflow: Mapping[str, Any] | None
    pods: Sequence[Mapping[str, Any]] = ()
    invalid: str | None = None
    foreign_workflow: bool = False


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


def task_status(states: Sequence[ReplicaState]) -> dict[str, dict[str, int]]:
    """Task → pod phase → count, over each replica's current attempt (replicas without a pod are left out)."""
    out: dict[str, dict[str, int]] = {}
    for s in states:
        if s.pod_phase is not None:
            phases = out.setdefault(s.task, {})
            phases[s.pod_phase] = phases.get(s.pod_phase, 0) + 1
    return out


def _events(
    old: Mapping[str, Any], decision: PhaseDecision, restarts_added: int, states: Sequence[ReplicaState]
) -> list[Event]:
    events = []
    if restarts_added > 0:
        again = ", ".join(
            f"{s.name} (retry {s.attempt}, rank {s.rank}, hostname {s.hostname})" for s in states if s.attempt > 0
        )
        events.append(Event("Warning", "ReplicaRestarted", f"restarted in place: {again}"))
    if decision.phase != old.get("phase"):
        kind = "Warning" if decision.phase in _WARNING_PHASES else "Normal"
        events.append(Event(kind, decision.cause or reason_of(decision.phase), decision.message))
    return events


def compute_status(obs: Observation, old: Mapping[str, Any] | None, now: str) -> StatusUpdate:
    """The new status of a job; ``now`` is an RFC 3339 timestamp (``2026-01-02T03:04:05Z``)."""
    old = dict(old or {})
    if old.get("phase") in TERMINAL:
        return StatusUpdate(old, changed=False)
    ours = None if obs.foreign_workflow else obs.workflow
    states = replica_states(obs.name, obs.membership, ours, obs.pods) if obs.membership else ()
    old_restarts = int(old.get("restarts") or 0)
    restarts = max(old_restarts, sum(s.attempt for s in states))
    old_mg = old.get("membershipGeneration")
    new_mg = obs.membership.generation if obs.membership else old_mg
    rescheduling = (old_mg is not None and new_mg is not None and new_mg > old_mg) or old.get("phase") == "Rescheduling"
    wf_name = old.get("workflowName") or ""
    if ours is not None:
        wf_name = ours["metadata"]["name"]
    decision = decide_phase(
        states=states,
        workflow=obs.workflow,
        backoff_limit=obs.backoff_limit,
        restarts=restarts,
        workflow_existed=bool(old.get("workflowName")),
        workflow_name=wf_name or obs.name,
        rescheduling=rescheduling,
        invalid=obs.invalid,
        foreign_workflow=obs.foreign_workflow,
    )
    status: dict[str, Any] = {
        "phase": decision.phase,
        "conditions": set_phase_condition(old.get("conditions") or [], decision.phase, decision.message, now),
        "replicas": len(obs.membership.replicas) if obs.membership else 0,
        "readyReplicas": sum(1 for s in states if s.ready),
        "taskStatus": task_status(states),
        "restarts": restarts,
        "reschedules": int(old.get("reschedules") or 0)
        + (1 if decision.phase == "Rescheduling" and old.get("phase") != "Rescheduling" else 0),
        "observedGeneration": obs.generation,
    }
    if "profilings" in old:
        status["profilings"] = old["profilings"]
    if wf_name:
        status["workflowName"] = wf_name
    if new_mg is not None:
        status["membershipGeneration"] = new_mg
    if decision.phase in TERMINAL:
        status["completionTimestamp"] = now
    changed = status != old
    events = _events(old, decision, restarts - old_restarts, states) if changed else []
    return StatusUpdate(status, changed, tuple(events), restarts - old_restarts, states)
