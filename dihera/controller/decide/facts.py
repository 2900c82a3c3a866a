"""What the phase policies decide from (pure): the view, and what is worked out of it once per pass.

:func:`facts` derives the replicas' states (:mod:`~dihera.controller.decide.replicas`), the failure
policies' drops and restart counts (:mod:`~dihera.controller.decide.failures`), the start time and the
deadline (:mod:`~dihera.controller.decide.deadline`); the job's settings are read from the view's job.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dihera.constants import Phase
from dihera.controller.decide.deadline import seconds_left
from dihera.controller.decide.failures import DropPlan, plan_drops, restart_counts
from dihera.controller.decide.hold import HELD_PHASES, SuspendPlan
from dihera.controller.decide.replicas import ReplicaState, replica_states
from dihera.controller.decide.view import JobView
from dihera.membership import Membership, plan_membership
from dihera.model import SuccessPolicy
from dihera.scaling.dag import live_replicas

__all__ = ["Facts", "facts"]


@dataclass(frozen=True)
class Facts:
    """``view``: what the pass observed; ``hold``: what spec.suspend / Kueue ask; ``now``: the pass's time.

    ``live``: the membership without the replicas scaling retired; ``states``: every live replica's current
    attempt; ``drops``: what failurePolicy DropReplica makes of them; ``kept``: the replicas still the job's
    (drops left out); ``restarts``: the job's restarts, ``counted`` those that count against backoffLimit;
    ``start``: the job's startTime (a resume starts the clock again); ``deadline_left`` the seconds before
    activeDeadlineSeconds, ``deadline_passed`` that deadline once past it (else None).
    """

    view: JobView
    hold: SuspendPlan
    now: str
    live: Membership | None
    states: tuple[ReplicaState, ...]
    drops: DropPlan
    kept: tuple[ReplicaState, ...]
    restarts: int
    counted: int
    start: str
    deadline_left: float | None
    deadline_passed: int | None

    @property
    def backoff_limit(self) -> int:
        return self.view.job.backoff_limit if self.view.job is not None else 0

    @property
    def drop_tasks(self) -> frozenset[str]:
        return self.view.job.drop_tasks if self.view.job is not None else frozenset()

    @property
    def success_policy(self) -> SuccessPolicy | None:
        return self.view.job.success_policy if self.view.job is not None else None

    @property
    def failed(self) -> list[ReplicaState]:
        return [s for s in self.kept if s.failed]

    @property
    def all_up(self) -> bool:
        return bool(self.kept) and all(s.up for s in self.kept)

    @property
    def workflow_status(self) -> Mapping[str, Any]:
        return (self.view.workflow or {}).get("status") or {}

    @property
    def workflow_name(self) -> str:
        """The job's Workflow's name (the one it had, once deleted; the job's name before it exists)."""
        ours = self.view.ours
        return str(ours["metadata"]["name"] if ours is not None else self.view.status.get("workflowName") or "")

    @property
    def membership_grew(self) -> bool:
        """A newer membership generation than the status records (a scale committed since)."""
        recorded = self.view.status.get("membershipGeneration")
        return self.live is not None and recorded is not None and self.live.generation > int(recorded)

    @property
    def rescheduling(self) -> bool:
        return self.membership_grew or self.view.phase == Phase.RESCHEDULING


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
