"""What a pass does to a job's objects before its status (dihera/controller/decide/converge.py): create,
create again on resume, release an evicted Workload's quota, sync a hand edit (no cluster)."""

from __future__ import annotations

import dataclasses

from dihera.controller.decide.converge import plan_converge, plan_edit
from dihera.controller.decide.hold import QueueState, SuspendAction
from dihera.controller.decide.view import JobView
from dihera.membership import Membership
from dihera.queueing import WorkloadView
from dihera.scaling import EditAction
from tests.unit.jobviews import MEMBERSHIP, dijob, workflow

#: learner-0 and collector-0 only: the membership of a run suspended after a scale-down
SHRUNK = Membership(2, MEMBERSHIP.replicas[:2])


def view(status: dict[str, object] | None = None, **kw: object) -> JobView:
    job = dijob(suspend=bool(kw.pop("suspend", False)))
    meta = {"name": "job", "namespace": "ns", "uid": "job-uid", "generation": 1}
    body: dict[str, object] = {"metadata": meta, "spec": {}}
    if status:
        body["status"] = status
    return JobView(body, job, **kw)  # type: ignore[arg-type]


def evicted() -> QueueState:
    workload_view = WorkloadView("job-workload", False, True, False, ("Preempted", "p"), None, {})
    assert workload_view.requeue_due
    return QueueState({"metadata": {"name": "job-workload"}}, workload_view, "evicted", "Evicted")


def test_a_new_job_is_created_as_its_spec_says() -> None:
    plan = plan_converge(view())
    assert plan.create is not None and plan.create.tasks == dijob().tasks and not plan.resume
    assert plan.hold.action is SuspendAction.NONE and not plan.release
    assert plan_edit(view(), plan).action is EditAction.NONE  # just created: nothing to sync


def test_a_started_job_is_never_created_again_and_a_suspended_one_is_not_created() -> None:
    assert plan_converge(view({"phase": "Running", "workflowName": "job"})).create is None
    held = plan_converge(view(suspend=True))
    assert held.create is None and held.hold.action is SuspendAction.HOLD


def test_a_resume_creates_the_run_again_with_the_replicas_of_its_membership() -> None:
    suspended = {"phase": "Suspended", "workflowName": "job", "membershipGeneration": 2}
    plan = plan_converge(view(suspended, membership=SHRUNK))
    assert plan.resume and plan.create is not None
    assert {t.name: t.replicas for t in plan.create.tasks} == {"learner": 1, "collector": 1}
    waiting = plan_converge(view(suspended, membership=SHRUNK, leftover_pods=2))
    assert waiting.create is None and waiting.hold.action is SuspendAction.WAIT


def test_an_evicted_jobs_quota_is_released_once_nothing_of_its_run_is_left() -> None:
    queued = {"phase": "Queued", "workflowName": "job"}
    assert plan_converge(view(queued, queue=evicted())).release
    assert not plan_converge(view(queued, queue=evicted(), leftover_pods=1)).release
    assert not plan_converge(view(queued, queue=evicted(), workflow=workflow())).release


def test_a_hand_edit_of_a_running_job_is_synced_and_a_foreign_workflow_is_left_alone() -> None:
    running = {"phase": "Running", "workflowName": "job", "observedGeneration": 1}
    edited = view(running, membership=MEMBERSHIP, workflow=workflow())
    edited = dataclasses.replace(edited, body={**edited.body, "metadata": {**edited.body["metadata"], "generation": 2}})
    job = edited.job
    assert job is not None
    grown = dataclasses.replace(edited, job=job.with_replicas("collector", 3))
    plan = plan_converge(grown)
    assert plan_edit(grown, plan).action is EditAction.SCALE
    foreign = dataclasses.replace(grown, foreign=True)
    assert plan_edit(foreign, plan_converge(foreign)).action is EditAction.NONE
    assert plan_edit(edited, plan_converge(edited)).action is EditAction.NONE  # spec and membership agree
