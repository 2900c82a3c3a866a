"""Which phase a job is in, and why (pure): the failure, success and restart policies in one place.

Each policy is one small function named after it; :data:`POLICIES` lists them in order and the
first that answers wins:

1. invalid_job             invalid stored object → Failed (the validation problems)
2. suspended               spec.suspend, or a resume waiting for the old run to go → Suspended;
                           Kueue has not admitted the job's Workload → Queued
                           (:mod:`dihera.controller.suspend`)
3. workflow_deleted        Workflow known to have existed, now gone → Failed (nothing is recreated)
4. deadline_exceeded       active longer than activeDeadlineSeconds → Failed (DeadlineExceeded)
5. workflow_not_created    no Workflow yet → Pending
6. foreign_workflow        a deleted DIJob's Workflow holds the name → Pending
7. drop_bound_reached      a DropReplica replica exhausted its retries and dropping it would cross
                           the bound → Failed (:mod:`dihera.controller.failure_policy`)
8. backoff_exceeded        restarts of FailJob tasks > backoffLimit → Failed
9. retries_exhausted       a replica's current attempt failed with no retry left → Failed
10. workflow_failed        Workflow Failed / Error → Failed
11. succeeded              Workflow Succeeded, or the successPolicy is met (default: every replica
                           Succeeded; :mod:`dihera.controller.success_policy`) → Succeeded
12. rescheduling           membership changed (until every replica is up again) → Rescheduling
13. replica_failed         a replica failed and will be retried → Restarting
14. retry_not_up           a retry's pod is not up yet → Restarting
15. pods_missing           some replica has no pod → Pending
16. all_up / starting      every replica Running and ready (or done) → Running, else Starting

Replicas dropped by ``failurePolicy: DropReplica`` are not in ``states``: like replicas removed by
a scale-down, they are no longer the job's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dihera.constants import FAILED_NODE_PHASES, EventReason, Phase, StuckReason
from dihera.controller.replicas import ReplicaState
from dihera.controller.success_policy import success_reached
from dihera.model import SuccessPolicy

__all__ = ["POLICIES", "PhaseDecision", "PhaseInputs", "decide_phase", "describe_failure"]


@dataclass(frozen=True)
class PhaseDecision:
    phase: Phase
    message: str
    #: Machine-readable cause for Events (``WorkflowDeleted``, ``BackoffLimitExceeded``...), else None.
    cause: str | None = None


@dataclass(frozen=True)
class PhaseInputs:
    """What the policies look at. ``restarts`` already includes this observation and counts only the
    restarts that count against backoffLimit (those of FailJob tasks); ``states`` leave out the
    replicas a failure policy dropped."""

    states: Sequence[ReplicaState]
    workflow: Mapping[str, Any] | None
    backoff_limit: int
    restarts: int
    workflow_existed: bool
    workflow_name: str
    rescheduling: bool
    invalid: str | None = None
    foreign_workflow: bool = False
    success_policy: SuccessPolicy | None = None
    #: ``activeDeadlineSeconds`` when the job has been active that long, else None.
    deadline_passed: int | None = None
    #: The Suspended phase's message while the job is suspended (or resuming), else None.
    suspended: str | None = None
    #: The phase the job is held in: Suspended, or Queued (Kueue has not admitted its Workload).
    held_phase: Phase = Phase.SUSPENDED
    #: The Event reason of entering it (None: ``Job<Phase>``).
    held_cause: str | None = None
    #: Tasks whose failurePolicy is DropReplica (their replicas' retries are their own).
    drop_tasks: frozenset[str] = frozenset()
    #: Why a replica that exhausted its retries could not be dropped (the job fails), else None.
    drop_refused: str | None = None

    @property
    def failed(self) -> list[ReplicaState]:
        return [s for s in self.states if s.failed]

    @property
    def workflow_status(self) -> Mapping[str, Any]:
        return (self.workflow or {}).get("status") or {}

    @property
    def all_up(self) -> bool:
        return bool(self.states) and all(s.up for s in self.states)


Policy = Callable[[PhaseInputs], PhaseDecision | None]


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
    return f"replica {state.name} ({where}) {how}"


#: Failed replicas named in a message; more are counted ("and 1,995 more"), so a 2,000-replica job's
#: status message and Event stay short.
FAILURES_NAMED = 5


def describe_failures(states: Sequence[ReplicaState]) -> str:
    """The first :data:`FAILURES_NAMED` failures described, ``; and N more`` for the rest."""
    named = "; ".join(describe_failure(s) for s in states[:FAILURES_NAMED])
    more = len(states) - FAILURES_NAMED
    return f"{named}; and {more:,} more" if more > 0 else named


def invalid_job(i: PhaseInputs) -> PhaseDecision | None:
    if i.invalid is None:
        return None
    return PhaseDecision(
        Phase.FAILED, f"the DIJob is invalid; nothing was created: {i.invalid}", EventReason.INVALID_JOB
    )


def suspended(i: PhaseInputs) -> PhaseDecision | None:
    return None if i.suspended is None else PhaseDecision(i.held_phase, i.suspended, i.held_cause)


def workflow_deleted(i: PhaseInputs) -> PhaseDecision | None:
    if i.workflow is not None or not i.workflow_existed:
        return None
    return PhaseDecision(
        Phase.FAILED,
        f"the Workflow {i.workflow_name} was deleted while the job was running; dihera does not recreate it",
        EventReason.WORKFLOW_DELETED,
    )


def deadline_exceeded(i: PhaseInputs) -> PhaseDecision | None:
    if i.deadline_passed is None:
        return None
    running = sum(1 for s in i.states if s.pod_phase in ("Pending", "Running"))
    return PhaseDecision(
        Phase.FAILED,
        f"the job was active longer than activeDeadlineSeconds {i.deadline_passed}; "
        f"{running} unfinished replica(s) are stopped as cleanPodPolicy says",
        EventReason.DEADLINE_EXCEEDED,
    )


def workflow_not_created(i: PhaseInputs) -> PhaseDecision | None:
    return PhaseDecision(Phase.PENDING, "creating the job's Workflow") if i.workflow is None else None


def foreign_workflow(i: PhaseInputs) -> PhaseDecision | None:
    if not i.foreign_workflow:
        return None
    return PhaseDecision(Phase.PENDING, f"waiting for the Workflow {i.workflow_name} of a deleted DIJob to go away")


def drop_bound_reached(i: PhaseInputs) -> PhaseDecision | None:
    if i.drop_refused is None:
        return None
    return PhaseDecision(Phase.FAILED, i.drop_refused, EventReason.DROP_BOUND_REACHED)


def backoff_exceeded(i: PhaseInputs) -> PhaseDecision | None:
    if i.restarts <= i.backoff_limit:
        return None
    counted = [s for s in i.states if s.task not in i.drop_tasks]
    who = describe_failures([s for s in counted if s.failed or s.attempt > 0])
    return PhaseDecision(
        Phase.FAILED,
        f"{i.restarts} restarts exceed backoffLimit {i.backoff_limit}: {who}",
        EventReason.BACKOFF_LIMIT_EXCEEDED,
    )


def retries_exhausted(i: PhaseInputs) -> PhaseDecision | None:
    exhausted = [
        s
        for s in i.failed
        if s.attempt >= i.backoff_limit or (s.task not in i.drop_tasks and i.restarts >= i.backoff_limit)
    ]
    if not exhausted:
        return None
    who = describe_failures(exhausted)
    return PhaseDecision(
        Phase.FAILED,
        f"{who} after {i.restarts} restart(s); backoffLimit {i.backoff_limit} reached",
        EventReason.BACKOFF_LIMIT_EXCEEDED,
    )


def workflow_failed(i: PhaseInputs) -> PhaseDecision | None:
    wf_phase = i.workflow_status.get("phase") or ""
    if wf_phase not in FAILED_NODE_PHASES:
        return None
    who = describe_failures(list(i.failed))
    detail = who or i.workflow_status.get("message") or "no replica reported a failure"
    return PhaseDecision(
        Phase.FAILED, f"the Workflow {i.workflow_name} {wf_phase.lower()}ed: {detail}", EventReason.WORKFLOW_FAILED
    )


def succeeded(i: PhaseInputs) -> PhaseDecision | None:
    if i.workflow_status.get("phase") == "Succeeded":
        return PhaseDecision(Phase.SUCCEEDED, f"all {len(i.states)} replicas succeeded")
    why = success_reached(i.success_policy, i.states)
    return None if why is None else PhaseDecision(Phase.SUCCEEDED, why)


def rescheduling(i: PhaseInputs) -> PhaseDecision | None:
    if not i.rescheduling or i.all_up:
        return None
    up = sum(1 for s in i.states if s.up)
    return PhaseDecision(
        Phase.RESCHEDULING, f"the replicas changed; {up}/{len(i.states)} up, waiting for the new ones to be ready"
    )


def replica_failed(i: PhaseInputs) -> PhaseDecision | None:
    if not i.failed:
        return None
    s = i.failed[0]
    return PhaseDecision(
        Phase.RESTARTING,
        f"{describe_failure(s)}; restarting it in place as retry {s.attempt + 1} (same rank and FQDN)",
    )


def retry_not_up(i: PhaseInputs) -> PhaseDecision | None:
    retrying = [s.name for s in i.states if s.attempt > 0 and not s.up]
    if not retrying:
        return None
    return PhaseDecision(Phase.RESTARTING, f"restarting {', '.join(retrying)} in place (same rank and FQDN)")


def pods_missing(i: PhaseInputs) -> PhaseDecision | None:
    missing = sum(1 for s in i.states if s.pod_phase is None)
    if not missing:
        return None
    return PhaseDecision(Phase.PENDING, f"{len(i.states) - missing}/{len(i.states)} pods created")


def running_or_starting(i: PhaseInputs) -> PhaseDecision:
    if i.all_up:
        return PhaseDecision(Phase.RUNNING, f"all {len(i.states)} replicas are running")
    return PhaseDecision(Phase.STARTING, f"all {len(i.states)} pods created; waiting for them to be ready")


#: The policies in order; the first that returns a decision wins, else :func:`running_or_starting`.
POLICIES: tuple[Policy, ...] = (
    invalid_job,
    suspended,
    workflow_deleted,
    deadline_exceeded,
    workflow_not_created,
    foreign_workflow,
    drop_bound_reached,
    backoff_exceeded,
    retries_exhausted,
    workflow_failed,
    succeeded,
    rescheduling,
    replica_failed,
    retry_not_up,
    pods_missing,
)


def decide_phase(inputs: PhaseInputs) -> PhaseDecision:
    """The phase for what was observed: the first of :data:`POLICIES` that answers, else Running/Starting."""
    for policy in POLICIES:
        decision = policy(inputs)
        if decision is not None:
            return decision
    return running_or_starting(inputs)
