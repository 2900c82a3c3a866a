"""What the phase policies read, and the plans the lifecycle modules make of a pass (pure data).

:class:`Facts` is what :func:`~dihera.controller.decide.phase.facts` works out of the view once per pass;
every phase policy reads it. :class:`SuspendPlan` is what :mod:`~dihera.controller.decide.hold` plans of
``spec.suspend`` and Kueue, :class:`DropPlan` what :mod:`~dihera.controller.decide.failures` plans of the
failed replicas; the facts carry both. They are defined here, one floor below the modules that build them
and the policies that read them, so that no import inside ``decide/`` runs back up (the floors:
``.importlinter``, docs/architecture.md); ``hold``, ``failures`` and ``phase`` export them as well.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from dihera.constants import Phase
from dihera.controller.decide.replicas import ReplicaState
from dihera.controller.decide.view import JobView
from dihera.membership import Membership
from dihera.model import SuccessPolicy
from dihera.objects import metadata
from dihera.shapes.dijob import DroppedReplica
from dihera.shapes.workflow import WorkflowStatus

__all__ = ["DropPlan", "Facts", "SuspendAction", "SuspendPlan"]


class SuspendAction(StrEnum):
    NONE = "none"  # not suspended: the other policies decide
    HOLD = "hold"  # suspended and nothing runs: create nothing
    STOP = "stop"  # suspended while running: after the status write, delete the Workflow
    WAIT = "wait"  # resuming: the suspended run's Workflow or pods are still going away
    RESUME = "resume"  # resuming: create the Workflow again from the membership


@dataclass(frozen=True)
class SuspendPlan:
    action: SuspendAction = SuspendAction.NONE
    #: The held phase's message (None: the job is not held).
    message: str | None = None
    #: Suspended (spec.suspend) or Queued (Kueue has not admitted the job's Workload).
    phase: Phase = Phase.SUSPENDED
    #: The Event reason of entering the phase (None: ``Job<Phase>``).
    cause: str | None = None


@dataclass(frozen=True)
class DropPlan:
    """What the failure policies make of one observation.

    ``dropped``: ``status.droppedReplicas`` after it (the old entries, then the new ones);
    ``new``: the entries added now (one ReplicaDropped Event each);
    ``remove``: the dropped replicas still in the membership (the scale-down to apply);
    ``refused``: why the job fails instead (a drop would cross the bound), else None.
    """

    dropped: tuple[DroppedReplica, ...] = ()
    new: tuple[DroppedReplica, ...] = ()
    remove: tuple[str, ...] = ()
    refused: str | None = None

    @property
    def names(self) -> frozenset[str]:
        """The dropped replicas still in the membership: no longer counted as the job's replicas."""
        return frozenset(self.remove)


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
    def workflow_status(self) -> WorkflowStatus:
        return (self.view.workflow or {}).get("status") or {}

    @property
    def workflow_name(self) -> str:
        """The job's Workflow's name (the one it had, once deleted; the job's name before it exists)."""
        ours = self.view.ours
        return str(metadata(ours)["name"] if ours is not None else self.view.status.get("workflowName") or "")

    @property
    def membership_grew(self) -> bool:
        """A newer membership generation than the status records (a scale committed since)."""
        recorded = self.view.status.get("membershipGeneration")
        return self.live is not None and recorded is not None and self.live.generation > int(recorded)

    @property
    def rescheduling(self) -> bool:
        return self.membership_grew or self.view.phase == Phase.RESCHEDULING
