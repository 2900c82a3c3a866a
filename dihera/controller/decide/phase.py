"""Which phase a job is in, and why (pure): the ordered table of phase policies, and the facts they read.

Each policy is one small function reading the pass's :class:`~dihera.controller.decide.records.Facts`,
named after what it checks; a lifecycle feature's policies live in its own module. :data:`POLICIES` lists
them in order and the first that answers wins:

1. invalid_job             invalid stored object → Failed (the validation problems)
2. held                    spec.suspend, or a resume waiting for the old run to go → Suspended;
                           Kueue has not admitted the job's Workload → Queued (``hold``)
3. workflow_deleted        Workflow known to have existed, now gone → Failed (nothing is recreated)
4. deadline_exceeded       active longer than activeDeadlineSeconds → Failed (``deadline``)
5. object_conflict         an object the DIJob does not own holds one of its objects' names (a Service
                           ``di-<job>``...) → Pending, reason ObjectConflict (``ownership``)
6. workflow_not_created    no Workflow yet → Pending
7. foreign_workflow        a deleted DIJob's Workflow holds the name → Pending
8. workflow_shut_down      the Workflow stopped or terminated from outside dihera (Argo's STOP,
                           TERMINATE) → Succeeded if the successPolicy is met, else Failed (``outside``)
9. drop_bound_reached      a DropReplica replica exhausted its retries and dropping it would cross
                           the bound → Failed (``failures``)
10. backoff_exceeded       restarts of FailJob tasks > backoffLimit → Failed (``failures``)
11. retries_exhausted      a replica's current attempt failed with no retry left → Failed (``failures``)
12. workflow_failed        Workflow Failed / Error → Failed
12a. training_ended        spec.trainingPolicy: a NaN/inf figure → Failed; a target reached or a plateau of
                           status.training → Succeeded (``training``)
13. succeeded              Workflow Succeeded, or the successPolicy is met (default: every replica
                           Succeeded) → Succeeded (``success``)
14. rescheduling           membership changed (until every replica is up again) → Rescheduling
15. replica_failed         a replica failed and will be retried → Restarting (``failures``)
16. retry_not_up           a retry's pod is not up yet → Restarting (``failures``)
17. pods_missing           some replica has no pod → Pending (what Argo says of it)
18. all_up / starting      every replica Running and ready (or done) → Running, else Starting

Replicas dropped by ``failurePolicy: DropReplica`` are not among the facts' ``kept`` replicas: like
replicas removed by a scale-down, they are no longer the job's.

What the policies read is worked out once per pass here too (:func:`facts`): the replicas' states
(:mod:`~dihera.controller.decide.replicas`), the failure policies' drops and restart counts
(:mod:`~dihera.controller.decide.failures`), the start time and the deadline
(:mod:`~dihera.controller.decide.deadline`). The record it fills, :class:`~dihera.controller.decide.records.Facts`,
is defined a floor below the policies that read it (:mod:`~dihera.controller.decide.records`); this module
sits above them.
"""

from __future__ import annotations

from collections.abc import Callable

from dihera.constants import EventReason, Phase
from dihera.controller.decide.deadline import deadline_exceeded, seconds_left
from dihera.controller.decide.decision import PhaseDecision
from dihera.controller.decide.failures import (
    FAILURES_NAMED,
    backoff_exceeded,
    describe_failures,
    drop_bound_reached,
    plan_drops,
    replica_failed,
    restart_counts,
    retries_exhausted,
    retry_not_up,
)
from dihera.controller.decide.hold import HELD_PHASES, held
from dihera.controller.decide.outside import workflow_shut_down
from dihera.controller.decide.ownership import describe
from dihera.controller.decide.records import DropPlan, Facts, SuspendPlan
from dihera.controller.decide.replicas import ReplicaState, replica_states
from dihera.controller.decide.success import succeeded
from dihera.controller.decide.training import training_ended
from dihera.controller.decide.view import JobView
from dihera.membership import Membership, plan_membership
from dihera.objects import FAILED_NODE_PHASES
from dihera.scaling.dag import live_replicas

__all__ = ["POLICIES", "Facts", "Policy", "decide_phase", "facts"]

Policy = Callable[[Facts], PhaseDecision | None]


def invalid_job(f: Facts) -> PhaseDecision | None:
    if f.view.invalid is None:
        return None
    return PhaseDecision(
        Phase.FAILED, f"the DIJob is invalid; nothing was created: {f.view.invalid}", EventReason.INVALID_JOB
    )


def workflow_deleted(f: Facts) -> PhaseDecision | None:
    if f.view.workflow is not None or not f.view.started:
        return None
    return PhaseDecision(
        Phase.FAILED,
        f"the Workflow {f.workflow_name or f.view.name} was deleted while the job was running; "
        "dihera does not recreate it",
        EventReason.WORKFLOW_DELETED,
    )


def object_conflict(f: Facts) -> PhaseDecision | None:
    """Objects under the job's names that the DIJob does not own (:mod:`~dihera.controller.decide.ownership`):
    nothing of them is touched, and the job cannot run without them → Pending until the names are free."""
    if not f.view.conflicts:
        return None
    return PhaseDecision(Phase.PENDING, describe(f.view.conflicts), EventReason.OBJECT_CONFLICT)


def workflow_not_created(f: Facts) -> PhaseDecision | None:
    return PhaseDecision(Phase.PENDING, "creating the job's Workflow") if f.view.workflow is None else None


def foreign_workflow(f: Facts) -> PhaseDecision | None:
    if not f.view.foreign:
        return None
    name = f.workflow_name or f.view.name
    return PhaseDecision(Phase.PENDING, f"waiting for the Workflow {name} of a deleted DIJob to go away")


def workflow_failed(f: Facts) -> PhaseDecision | None:
    wf_phase = f.workflow_status.get("phase") or ""
    if wf_phase not in FAILED_NODE_PHASES:
        return None
    detail = describe_failures(f.failed) or f.workflow_status.get("message") or "no replica reported a failure"
    name = f.workflow_name or f.view.name
    return PhaseDecision(
        Phase.FAILED, f"the Workflow {name} {wf_phase.lower()}ed: {detail}", EventReason.WORKFLOW_FAILED
    )


def rescheduling(f: Facts) -> PhaseDecision | None:
    if not f.rescheduling or f.all_up:
        return None
    up = sum(1 for s in f.kept if s.up)
    return PhaseDecision(
        Phase.RESCHEDULING, f"the replicas changed; {up}/{len(f.kept)} up, waiting for the new ones to be ready"
    )


def pods_missing(f: Facts) -> PhaseDecision | None:
    """Some replica has no pod yet → Pending, naming what Argo says of those it could not create."""
    missing = [s for s in f.kept if s.pod_phase is None]
    if not missing:
        return None
    created = f"{len(f.kept) - len(missing)}/{len(f.kept)} pods created"
    said = [f"{s.name}: {s.node_message}" for s in missing if s.node_message]
    if not said:
        return PhaseDecision(Phase.PENDING, created)
    more = f"; and {len(said) - FAILURES_NAMED:,} more" if len(said) > FAILURES_NAMED else ""
    return PhaseDecision(Phase.PENDING, f"{created}; Argo says: {'; '.join(said[:FAILURES_NAMED])}{more}")


def running_or_starting(f: Facts) -> PhaseDecision:
    if f.all_up:
        return PhaseDecision(Phase.RUNNING, f"all {len(f.kept)} replicas are running")
    return PhaseDecision(Phase.STARTING, f"all {len(f.kept)} pods created; waiting for them to be ready")


#: The policies in order; the first that returns a decision wins, else :func:`running_or_starting`.
POLICIES: tuple[Policy, ...] = (
    invalid_job,
    held,
    workflow_deleted,
    deadline_exceeded,
    object_conflict,
    workflow_not_created,
    foreign_workflow,
    workflow_shut_down,
    drop_bound_reached,
    backoff_exceeded,
    retries_exhausted,
    workflow_failed,
    training_ended,
    succeeded,
    rescheduling,
    replica_failed,
    retry_not_up,
    pods_missing,
)


def decide_phase(f: Facts) -> PhaseDecision:
    """The phase for what was observed: the first of :data:`POLICIES` that answers, else Running/Starting."""
    for policy in POLICIES:
        decision = policy(f)
        if decision is not None:
            return decision
    return running_or_starting(f)


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
