"""What the phase policies decide from (pure): the view, and what is worked out of it once per pass.

:func:`facts` derives the replicas' states (:mod:`~dihera.controller.decide.replicas`), the failure
policies' drops and restart counts (:mod:`~dihera.controller.decide.failures`), the start time and the
deadline (:mod:`~dihera.controller.decide.deadline`); the job's settings are read from the view's job.
The record it fills, :class:`~dihera.controller.decide.records.Facts`, is defined a floor below the
policies that read it (:mod:`~dihera.controller.decide.records`); this module sits above them.
"""

from __future__ import annotations

from dihera.controller.decide.deadline import seconds_left
from dihera.controller.decide.failures import plan_drops, restart_counts
from dihera.controller.decide.hold import HELD_PHASES
from dihera.controller.decide.records import DropPlan, Facts, SuspendPlan
from dihera.controller.decide.replicas import ReplicaState, replica_states
from dihera.controller.decide.view import JobView
from dihera.membership import Membership, plan_membership
from dihera.scaling.dag import live_replicas

__all__ = ["Facts", "facts"]


def _replicas(view: JobView, now: str) -> tuple[Membership | None, tuple[ReplicaState, ...], DropPlan, int, int]:
    """``(live, states, drops, restarts, counted)``: the replicas and what the failure policies make of them."""
    job = view.job
    membership = view.membership or (plan_membership(job, None) if job is not None else None)
    if job is None or membership is None:
        return None, (), DropPlan(), int(view.status.get("restarts") or 0), 0
    live = live_replicas(membership, view.ours)
    states = replica_states(view.name, membership, view.ours, view.pods)
    dropped = view.status.get("droppedReplicas") or ()
    drops = plan_drops(states, job.drop_tasks, job.backoff_limit, job.min_replicas, dropped, live.generation, now)
    restarts, counted = restart_counts(states, drops, job.drop_tasks, int(view.status.get("restarts") or 0))
    return live, states, drops, restarts, counted


def _clock(view: JobView, hold: SuspendPlan, now: str) -> tuple[str, float | None, int | None]:
    """``(start, deadline_left, deadline_passed)``: a resume starts the clock again; a held job has no deadline."""
    resumed = view.phase in HELD_PHASES and hold.message is None
    start = now if resumed or not view.status.get("startTime") else str(view.status["startTime"])
    deadline = None if hold.message or view.job is None else view.job.active_deadline_seconds
    left = seconds_left(start, deadline, now)
    if left is None:
        return start, None, None
    return (start, left, None) if left > 0 else (start, None, deadline)


def facts(view: JobView, hold: SuspendPlan, now: str) -> Facts:
    """Work out, once, what the policies read of ``view``."""
    live, states, drops, restarts, counted = _replicas(view, now)
    kept = tuple(s for s in states if s.name not in drops.names) if drops.names else states
    start, left, passed = _clock(view, hold, now)
    return Facts(view, hold, now, live, states, drops, kept, restarts, counted, start, left, passed)
