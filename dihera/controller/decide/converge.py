"""What a pass does to a job's objects before it writes the status (pure): create them, create them
again on a resume, release an evicted Workload's quota, or bring a running job's replicas and its spec
together.

| what the view shows                                              | plan                                   |
|------------------------------------------------------------------|----------------------------------------|
| never started, not held                                          | create the objects (``create``)         |
| held, nothing of the held run left, hold lifted (``RESUME``)     | create them again from the membership   |
| Kueue evicted the job and nothing of its run is left             | release the Workload's quota (``release``) |
| running, ``spec.tasks[].replicas`` edited or older than the membership | scale (:func:`plan_edit`)        |

A running job's objects are never rendered again: a hand edit of the replicas goes through the same
``JobScaler`` as the di-server (:mod:`dihera.scaling.spec_edit` decides). A Workflow that existed
(``status.workflowName``) and is gone is never recreated: the job fails (the phase policies).
"""

from __future__ import annotations

from dataclasses import dataclass

from dihera.controller.decide.hold import SuspendAction, SuspendPlan, plan_hold, resumed_job
from dihera.controller.decide.view import JobView
from dihera.model import DIJob
from dihera.scaling import EditAction, SpecEdit, plan_spec_edit, spec_generation

__all__ = ["ConvergePlan", "plan_converge", "plan_edit"]


@dataclass(frozen=True)
class ConvergePlan:
    """``hold``: what spec.suspend / Kueue ask; ``create``: the job to render and create (None: nothing
    to create); ``resume``: it is created again from the membership; ``release``: give an evicted
    Workload's quota back."""

    hold: SuspendPlan
    create: DIJob | None = None
    resume: bool = False
    release: bool = False


def plan_converge(view: JobView) -> ConvergePlan:
    """What to create (or release) for the job ``view`` shows (a valid one)."""
    job = view.job
    assert job is not None, "only a valid job's objects are converged"
    hold = plan_hold(view)
    queue = view.queue
    release = queue is not None and queue.requeue_due and view.workflow is None and not view.leftover_pods
    if hold.action is SuspendAction.RESUME:
        source = resumed_job(job, view.membership) if view.membership is not None else job
        return ConvergePlan(hold, source, resume=True, release=release)
    if hold.action is SuspendAction.NONE and view.workflow is None and not view.started:
        return ConvergePlan(hold, job, release=release)
    return ConvergePlan(hold, release=release)


def plan_edit(view: JobView, plan: ConvergePlan) -> SpecEdit:
    """Whether the running job's replicas and its spec must be brought together (after ``plan`` was
    applied: ``view`` shows what is there now). Nothing for a job just created, held, or whose
    Workflow is a deleted DIJob's, or with an object under its names it does not own (the scaler would write
    the membership ConfigMap); on resume, replicas edited while the job was held are applied."""
    job = view.job
    fresh = plan.create is not None and not plan.resume
    held = plan.hold.action not in (SuspendAction.NONE, SuspendAction.RESUME)
    if job is None or view.foreign or view.conflicts or fresh or held:
        return SpecEdit(EditAction.NONE)
    observed = None if plan.resume else view.status.get("observedGeneration")
    return plan_spec_edit(job, spec_generation(view.body), view.generation, observed, view.membership, view.workflow)
