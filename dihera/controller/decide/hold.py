"""Holding a job (pure): ``spec.suspend``, and Kueue not admitting the job; the whole concern, decided on a
:class:`~dihera.controller.decide.view.JobView`: what a held or resumed job needs (:func:`plan_hold`), the
phase it is held in (:func:`held`, a phase policy), the job created again on resume (:func:`resumed_job`).
The reconciler deletes the Workflow of a STOP after the status write, and creates it again on RESUME.

One Workflow per job run: suspending deletes the job's Workflow (its pods go with it, through their
ownerReferences) and keeps the membership ConfigMap and the headless Service; resuming creates the
Workflow again, under the same name, from the membership the ConfigMap holds, so every replica
comes back with its rank, index, hostname and FQDN (docs/controller.md, "Suspend and resume").

| spec.suspend | observed                                          | action  | phase     |
|--------------|---------------------------------------------------|---------|-----------|
| true         | never started (no ``status.workflowName``)        | HOLD    | Suspended: nothing is created |
| true         | our Workflow, not being deleted                   | STOP    | Suspended, then the Workflow is deleted |
| true         | no Workflow (or it is being deleted)              | HOLD    | Suspended |
| false        | Suspended, Workflow or pods of that run still there | WAIT  | Suspended until they are gone |
| false        | Suspended, nothing of that run left               | RESUME  | the Workflow is created again |
| false        | otherwise                                         | NONE    | as the other policies say |

Kueue holds a queued job the same way (docs/queueing.md): while its Workload is not admitted (never
yet, or evicted) ``plan_suspend`` gets ``hold`` (Kueue's word, :func:`dihera.queueing.workload.queue_state`
reads it from the Workload and its scale-up slices as :mod:`dihera.controller.kueue` observed them) and the job is
``Queued`` instead of ``Suspended``, with the same actions: nothing created, or the running Workflow
deleted, and the Workflow created again from the membership once Kueue admits it again.
``spec.suspend`` wins over it.

Waiting for the last pod matters: Argo names a replica's pods after the Workflow and the DAG node,
so the new run's pods have the old ones' names and must not meet them. A suspension is not a
failure: the status' restarts keep their count, the new run's attempts start at 0.
"""

from __future__ import annotations

import dataclasses

from dihera.constants import Phase
from dihera.controller.decide.decision import PhaseDecision
from dihera.controller.decide.records import Facts, SuspendAction, SuspendPlan
from dihera.controller.decide.view import JobView
from dihera.membership import Membership
from dihera.model import DIJob
from dihera.objects import deleting
from dihera.queueing import QueueState
from dihera.shapes.dijob import DIJobStatus
from dihera.shapes.workflow import Workflow

__all__ = [
    "HELD_PHASES",
    "QueueState",
    "SuspendAction",
    "SuspendPlan",
    "held",
    "leftover_counted",
    "plan_hold",
    "plan_suspend",
    "resumed_job",
]


#: The phases a job is held in; leaving one resumes it.
HELD_PHASES = frozenset({Phase.SUSPENDED, Phase.QUEUED})


def _running(workflow: Workflow | None, foreign: bool) -> bool:
    return workflow is not None and not foreign and not deleting(workflow)


def plan_suspend(
    suspend: bool,
    old: DIJobStatus,
    workflow: Workflow | None,
    foreign: bool,
    replicas: int,
    leftover_pods: int,
    hold: str | None = None,
    hold_cause: str | None = None,
) -> SuspendPlan:
    """What ``spec.suspend`` asks of a job in status ``old``; ``replicas``: its live replicas;
    ``leftover_pods``: pods of the job still there while it has no Workflow; ``hold``: why Kueue holds
    the job (its Workload is not admitted), else None; ``hold_cause``: the Event reason of that."""
    started = bool(old.get("workflowName"))
    if not suspend and hold is not None:
        return _held(hold, hold_cause, started, workflow, foreign, replicas, leftover_pods)
    if suspend:
        if not started and workflow is None:
            return SuspendPlan(SuspendAction.HOLD, "spec.suspend is true: nothing is created until it is false")
        if _running(workflow, foreign):
            return SuspendPlan(
                SuspendAction.STOP,
                f"spec.suspend is true: stopping the job's {replicas} replica(s) (its Workflow is deleted; "
                "ranks and FQDNs are kept for the resume)",
            )
        return SuspendPlan(
            SuspendAction.HOLD,
            "spec.suspend is true: every replica is stopped; they start again with the same ranks and FQDNs "
            "when it is false",
        )
    if old.get("phase") not in HELD_PHASES or not started:
        return SuspendPlan()
    if workflow is not None or leftover_pods:
        gone = "its Workflow" if workflow is not None else f"{leftover_pods} pod(s)"
        if old.get("phase") == Phase.QUEUED:
            message = f"admitted by Kueue: resuming once {gone} of the evicted run are gone"
            return SuspendPlan(SuspendAction.WAIT, message, Phase.QUEUED)
        return SuspendPlan(
            SuspendAction.WAIT, f"spec.suspend is false: resuming once {gone} of the suspended run are gone"
        )
    return SuspendPlan(SuspendAction.RESUME)


def _held(
    hold: str,
    cause: str | None,
    started: bool,
    workflow: Workflow | None,
    foreign: bool,
    replicas: int,
    leftover_pods: int,
) -> SuspendPlan:
    """Kueue holds the job: as spec.suspend, in phase Queued with Kueue's word."""
    if _running(workflow, foreign):
        message = f"{hold}; stopping the job's {replicas} replica(s) (ranks and FQDNs are kept for the resume)"
        return SuspendPlan(SuspendAction.STOP, message, Phase.QUEUED, cause)
    if started and leftover_pods:
        message = f"{hold}; {leftover_pods} pod(s) of the stopped run still going away"
        return SuspendPlan(SuspendAction.HOLD, message, Phase.QUEUED, cause)
    return SuspendPlan(SuspendAction.HOLD, hold, Phase.QUEUED, cause)


def leftover_counted(view: JobView) -> bool:
    """Whether a pass must count the pods of the held run still going away (asked of the API server): a
    resume, or the release of an evicted Workload's quota, must not happen while an old pod remains."""
    job = view.job
    if job is None or job.suspend or view.workflow is not None or not view.started:
        return False
    hold = view.queue.hold if view.queue is not None else None
    resuming = hold is None and view.phase in HELD_PHASES
    releasing = view.queue is not None and view.queue.requeue_due
    return resuming or releasing


def plan_hold(view: JobView) -> SuspendPlan:
    """What ``spec.suspend`` (or Kueue, through ``view.queue``) asks of the job the view shows."""
    job = view.job
    if job is None:
        return SuspendPlan()
    queue = view.queue if not job.suspend else None  # spec.suspend wins: a suspended job is not queued
    hold = queue.hold if queue is not None else None
    cause = queue.cause if queue is not None else None
    replicas = len(view.membership.replicas) if view.membership else 0
    return plan_suspend(
        job.suspend, view.status, view.workflow, view.foreign, replicas, view.leftover_pods, hold, cause
    )


def held(f: Facts) -> PhaseDecision | None:
    """The phase policy: Suspended (spec.suspend, or a resume waiting for the old run to go) or Queued
    (Kueue has not admitted the job's Workload), with the plan's message."""
    hold = f.hold
    return None if hold.message is None else PhaseDecision(hold.phase, hold.message, hold.cause)


def resumed_job(job: DIJob, membership: Membership) -> DIJob:
    """``job`` with each task's replicas as ``membership`` has them: the run resumed is the one suspended.

    A replica count edited while the job was suspended is applied after the resume, by the scaler.
    """
    counts = membership.task_counts(t.name for t in job.tasks)
    tasks = tuple(dataclasses.replace(t, replicas=counts[t.name]) for t in job.tasks)
    return dataclasses.replace(job, tasks=tasks)
