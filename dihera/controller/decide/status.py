"""The DIJob status from what one pass observed (pure): view + the hold + now → new status, Events, drops.

:func:`compute_status` works the facts out of the view once (:func:`~dihera.controller.decide.phase.facts`),
asks the phase policies (:mod:`~dihera.controller.decide.phase`), and writes the status fields. Nothing
here reads the clock or the cluster; :mod:`dihera.controller.reconcile` does both and writes the result
only when :attr:`StatusUpdate.changed`. Once a job is Succeeded or Failed its status is final: later
observations (pods being cleaned up) do not rewrite it. The status is typed
(:class:`~dihera.shapes.dijob.DIJobStatus`); what the other decide modules still hand as raw dicts (the
view's status, the conditions, the dropped replicas) is taken as typed through :func:`~dihera.shapes.dijob.as_status`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import cast

from dihera.constants import (
    EVENT_NORMAL,
    EVENT_WARNING,
    TERMINAL_PHASES,
    WARNING_CAUSES,
    WARNING_PHASES,
    EventReason,
    Phase,
    condition_reason,
)
from dihera.controller.decide.conditions import phase_condition, set_phase_condition
from dihera.controller.decide.decision import Event, PhaseDecision
from dihera.controller.decide.failures import drop_events, restart_events
from dihera.controller.decide.hold import HELD_PHASES, SuspendPlan
from dihera.controller.decide.outputs import job_artifacts
from dihera.controller.decide.ownership import retry_after
from dihera.controller.decide.phase import Facts, decide_phase, facts
from dihera.controller.decide.progress import task_progress, workflow_progress
from dihera.controller.decide.replicas import ReplicaState
from dihera.controller.decide.success import finish_grace_left
from dihera.controller.decide.view import JobView
from dihera.membership import Membership
from dihera.patches import PatchOp, precondition
from dihera.queueing.shrink import shrunk_note
from dihera.shapes.dijob import (
    ArtifactOutput,
    Condition,
    DIJobStatus,
    DroppedReplica,
    StuckReplica,
    as_dijob,
    as_status,
)

__all__ = [
    "OWN_FIELDS",
    "PROGRESS_FIELDS",
    "TERMINAL",
    "Event",
    "StatusUpdate",
    "compute_status",
    "progress_only",
    "same_object",
    "status_patch",
    "stuck_replicas",
    "task_status",
]

TERMINAL = TERMINAL_PHASES
#: The status fields the controller writes; every other one (``profilings``, ``training``: the di-server's) is
#: left alone.
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
    "artifacts",
)

#: The status fields a pass recomputes from what it observes alone (pod counts, Argo's node progress):
#: a write that changes only these reports progress, and a later one writes the then-current values.
PROGRESS_FIELDS = frozenset({"readyReplicas", "taskStatus", "progress", "taskProgress"})
#: What may differ in a condition when only progress changed (a Pending message counts the pods created).
_CONDITION_PROGRESS = frozenset({"message", "lastUpdateTime"})


@dataclass(frozen=True)
class StatusUpdate:
    status: DIJobStatus
    changed: bool
    events: tuple[Event, ...] = ()
    restarts_added: int = 0
    states: tuple[ReplicaState, ...] = field(default=(), compare=False)
    #: Seconds until a time-based decision (activeDeadlineSeconds) is due: reconcile again then.
    wakeup: float | None = None
    #: Replicas a failure policy dropped that are still in the membership: the scale-down to apply
    #: after the status write (names ``<task>-<index>``).
    drops: tuple[str, ...] = ()

    @property
    def phase(self) -> str:
        return str(self.status["phase"])


def task_status(states: Sequence[ReplicaState]) -> dict[str, dict[str, int]]:
    """Task → pod phase → count, over each replica's current attempt (replicas without a pod are left out)."""
    out: dict[str, dict[str, int]] = {}
    for s in states:
        if s.pod_phase is not None:
            phases = out.setdefault(s.task, {})
            phases[s.pod_phase] = phases.get(s.pod_phase, 0) + 1
    return out


def stuck_replicas(states: Sequence[ReplicaState]) -> list[StuckReplica]:
    """``status.stuckReplicas``: every replica whose current pod is stuck, in rank order."""
    out: list[StuckReplica] = []
    for s in states:
        if s.problem is not None:
            entry: StuckReplica = {"replica": s.name, "reason": s.problem[0], "message": s.problem[1]}
            if s.pod_name:
                entry["pod"] = s.pod_name
            out.append(entry)
    return out


def _describe_stuck(entry: StuckReplica) -> str:
    pod = f" (pod {entry['pod']})" if entry.get("pod") else ""
    return f"replica {entry['replica']}{pod} is {entry['reason']}: {entry['message']}"


def _with_stuck(decision: PhaseDecision, stuck: Sequence[StuckReplica]) -> PhaseDecision:
    """The phase message followed by why replicas are stuck."""
    if not stuck:
        return decision
    why = "; ".join(_describe_stuck(e) for e in stuck)
    return PhaseDecision(decision.phase, f"{decision.message}; {why}", decision.cause)


def _with_dropped(decision: PhaseDecision, dropped: Sequence[DroppedReplica]) -> PhaseDecision:
    """A running job's phase message followed by the replicas it goes on without."""
    if not dropped or decision.phase in TERMINAL:
        return decision
    who = ", ".join(f"{e['replica']} (rank {e['rank']})" for e in dropped)
    return PhaseDecision(
        decision.phase,
        f"{decision.message}; {len(dropped)} replica(s) dropped by failurePolicy DropReplica: {who}",
        decision.cause,
    )


def _stuck_events(old: DIJobStatus, stuck: Sequence[StuckReplica]) -> list[Event]:
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


def _events(f: Facts, decision: PhaseDecision, stuck: Sequence[StuckReplica], refused: str | None) -> list[Event]:
    """The Events of a pass, in order: drops, stuck replicas, a refused scale, a new membership, restarts,
    the phase change. Every one but ScaleRefused follows a change of the status; the reconciler passes a
    refusal once."""
    old = as_status(f.view.status)
    events = [*drop_events(f), *_stuck_events(old, stuck)]
    if refused:
        events.append(Event(EVENT_WARNING, EventReason.SCALE_REFUSED, refused))
    if f.membership_grew and f.live is not None:
        events.append(_membership_event(f.live))
    events += restart_events(f)
    if decision.phase != f.view.phase or _new_warning(old, decision):
        warn = decision.phase in WARNING_PHASES or decision.cause in WARNING_CAUSES
        kind = EVENT_WARNING if warn else EVENT_NORMAL
        events.append(Event(kind, decision.cause or condition_reason(decision.phase), decision.message))
    return events


def _current(status: DIJobStatus) -> Condition:
    """The True condition of ``status`` (the phase's), or {}."""
    return cast(Condition, phase_condition(status))


def _new_warning(old: DIJobStatus, decision: PhaseDecision) -> bool:
    """A Warning cause (:data:`WARNING_CAUSES`) whose message the phase's condition does not say yet."""
    return decision.cause in WARNING_CAUSES and _current(old).get("message") != decision.message


def _dropped(f: Facts) -> list[DroppedReplica]:
    """``status.droppedReplicas`` after this pass (the failure policies' plan, raw dicts), typed."""
    return [cast(DroppedReplica, dict(e)) for e in f.drops.dropped]


def _decided(f: Facts) -> tuple[PhaseDecision, list[StuckReplica]]:
    """The phase, its message followed by the stuck and the dropped replicas, and the stuck replicas."""
    decision = decide_phase(f)
    stuck = stuck_replicas(f.kept) if decision.phase not in (Phase.SUCCEEDED, *HELD_PHASES) else []
    return _with_dropped(_with_stuck(decision, stuck), _dropped(f)), stuck


def compute_status(view: JobView, hold: SuspendPlan, now: str, refused: str | None = None) -> StatusUpdate:
    """The new status of the job ``view`` shows; ``hold``: what spec.suspend / Kueue ask
    (:func:`~dihera.controller.decide.hold.plan_hold`); ``now``: an RFC 3339 timestamp
    (``2026-01-02T03:04:05Z``); ``refused``: why a hand edit of the replicas was refused (a Warning)."""
    old = as_status(view.status)
    if view.finished:  # final, but for the artifacts stored after the end (dihera/controller/decide/outputs.py)
        stored = _artifacts(view)
        status: DIJobStatus = {**old, "artifacts": stored} if stored else {**old}
        return StatusUpdate(status, changed=status != old)
    f = facts(view, hold, now)
    decision, stuck = _decided(f)
    status = _status(f, decision, stuck)
    active = decision.phase not in TERMINAL and decision.phase not in HELD_PHASES
    return StatusUpdate(
        status,
        status != old,
        tuple(_events(f, decision, stuck, refused)),
        f.restarts - int(old.get("restarts") or 0),
        f.kept,
        _wakeup(f) if decision.phase not in TERMINAL else None,
        f.drops.remove if active else (),
    )


def _wakeup(f: Facts) -> float | None:
    """Seconds until a time-based decision falls due: activeDeadlineSeconds, the grace after DI-engine's end,
    the next look at objects in conflict (a backoff: nothing queues the job when an unlabelled one goes)."""
    conflict = None
    if f.view.conflicts:
        pending = _current(as_status(f.view.status))
        conflict = retry_after(
            pending.get("lastTransitionTime") if pending.get("type") == Phase.PENDING else None, f.now
        )
    due = [w for w in (f.deadline_left, finish_grace_left(f), conflict) if w is not None]
    return min(due) if due else None


def _status(f: Facts, decision: PhaseDecision, stuck: list[StuckReplica]) -> DIJobStatus:
    """The status fields the controller owns, from the facts and the phase decided."""
    old, now = as_status(f.view.status), f.now
    old_mg = old.get("membershipGeneration")
    new_mg = f.live.generation if f.live else old_mg
    # every committed membership change (scale-up or down, server or spec edit) is one reschedule
    changes = max(int(new_mg) - int(old_mg), 0) if old_mg is not None and new_mg is not None else 0
    conditions = old.get("conditions") or []
    message, cause = _condition_text(f, decision)
    written = set_phase_condition(conditions, decision.phase, message, now, cause)
    status: DIJobStatus = {
        "phase": decision.phase.value,
        "conditions": [cast(Condition, c) for c in written],
        "replicas": len(f.kept),
        "readyReplicas": sum(1 for s in f.kept if s.ready),
        "taskStatus": task_status(f.kept),
        "restarts": f.restarts,
        "reschedules": int(old.get("reschedules") or 0) + changes,
        "observedGeneration": f.view.generation,
        "startTime": f.start,
    }
    status.update(_optional(f, decision, stuck, new_mg))
    return status


def _condition_text(f: Facts, decision: PhaseDecision) -> tuple[str, str | None]:
    """The phase condition's message and cause: a Running job whose collectors were given back to a
    higher-priority Workload says so with its numbers (docs/queueing.md, "Shrink before eviction")."""
    job = f.view.job
    if decision.phase is not Phase.RUNNING or job is None:
        return decision.message, decision.cause
    note = shrunk_note(job.annotations, {t.name: t.replicas for t in job.tasks})
    if note is None:
        return decision.message, decision.cause
    return f"{decision.message}; shrunk before eviction: {note}", EventReason.COLLECTORS_SHRUNK.value


def _optional(f: Facts, decision: PhaseDecision, stuck: list[StuckReplica], generation: int | None) -> DIJobStatus:
    """The status fields written only when they have a value."""
    out: DIJobStatus = {}
    if stuck:
        out["stuckReplicas"] = stuck
    if dropped := _dropped(f):
        out["droppedReplicas"] = dropped
    if (profilings := as_status(f.view.status).get("profilings")) is not None:
        out["profilings"] = profilings
    if (training := as_status(f.view.status).get("training")) is not None:
        out["training"] = training  # the di-server's, carried: not a change of the controller's
    if f.workflow_name:
        out["workflowName"] = f.workflow_name
    if generation is not None:
        out["membershipGeneration"] = generation
    if decision.phase in TERMINAL:
        out["completionTimestamp"] = f.now
    if (progress := workflow_progress(f.view.ours)) is not None:
        out["progress"] = progress
    if task_progresses := task_progress(f.kept):
        out["taskProgress"] = task_progresses
    if artifacts := _artifacts(f.view):
        out["artifacts"] = artifacts
    return out


def _artifacts(view: JobView) -> list[ArtifactOutput]:
    """``status.artifacts``: what the replicas of the job's own Workflow stored of ``spec.artifacts``."""
    if view.job is None or not view.job.artifacts:
        return []
    return [cast(ArtifactOutput, a) for a in job_artifacts(view.ours, {a.name for a in view.job.artifacts})]


def progress_only(old: Mapping[str, object], new: Mapping[str, object]) -> bool:
    """Whether ``new`` differs from ``old`` in progress only: :data:`PROGRESS_FIELDS`, and the message
    of a condition (with its ``lastUpdateTime``). False when the phase or anything else changed."""
    if not old or old.get("phase") != new.get("phase"):
        return False
    for key in old.keys() | new.keys():
        if key in PROGRESS_FIELDS or old.get(key) == new.get(key):
            continue
        if key != "conditions" or not _same_conditions(old.get(key), new.get(key)):
            return False
    return True


def _same_conditions(old: object, new: object) -> bool:
    """The same conditions but for their messages (and when those were written)."""

    def bare(conds: object) -> list[dict[str, object]]:
        if not isinstance(conds, Sequence):
            return []
        return [{k: v for k, v in c.items() if k not in _CONDITION_PROGRESS} for c in conds if isinstance(c, Mapping)]

    return bare(old) == bare(new)


def same_object(body: Mapping[str, object]) -> PatchOp | None:
    """The patch operation that makes the API server refuse the patch unless the DIJob is still the object
    ``body`` was read as (its uid): a DIJob deleted and created again under the name between a pass's read
    and its write gets nothing of the old one's status. A JSON patch ``test`` (answered 422, which
    :meth:`~dihera.kube.jobs.JobStore.patch_status` reports as a conflict): a uid set in the patch itself is
    no precondition on the status subresource, whose update keeps the stored metadata. None without a uid."""
    uid = as_dijob(body)["metadata"].get("uid")
    return {"op": "test", "path": "/metadata/uid", "value": uid} if uid else None


def status_patch(body: Mapping[str, object], status: DIJobStatus) -> list[PatchOp]:
    """JSON patch writing the controller's fields of ``status`` over the DIJob ``body`` was read as.

    Only :data:`OWN_FIELDS` that changed are written (``add`` replaces a whole value; a field gone is
    removed), so a field another writer owns, or wrote since ``body`` was read, is never touched. Every
    write applies only to the object read (:func:`same_object`: its uid). A job without a status yet gets
    one created under a resourceVersion precondition (another writer may have created it meanwhile: then
    the API server answers 409 and the pass reads again). Later writes carry no resourceVersion
    precondition, so the di-server's profilings writes never make them fail; a watch cache behind the API
    server cannot make them undo a newer status either (docs/controller.md).
    """
    read = as_dijob(body).get("status")
    ops: list[PatchOp] = []
    if (same := same_object(body)) is not None:
        ops.append(same)
    if read is None:
        ops.append(precondition(body))
        ops.append({"op": "add", "path": "/status", "value": {}})
    old: Mapping[str, object] = read or {}
    new: Mapping[str, object] = status
    for name in OWN_FIELDS:
        if name in new and new[name] != old.get(name):
            ops.append({"op": "add", "path": f"/status/{name}", "value": new[name]})
        elif name not in new and name in old:
            ops.append({"op": "remove", "path": f"/status/{name}"})
    return ops
