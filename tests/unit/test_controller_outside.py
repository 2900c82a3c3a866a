"""What is done to a job's objects from outside dihera (dihera/controller/decide/outside.py): an Argo
RESUBMIT's copy, SUSPEND, STOP and TERMINATE, a deleted or edited Service or membership ConfigMap."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

from dihera.constants import Phase
from dihera.controller.decide.hold import SuspendPlan
from dihera.controller.decide.outside import plan_outside, workflow_shut_down
from dihera.controller.decide.phase import facts
from dihera.controller.decide.view import JobView
from dihera.model import SuccessOperator, SuccessPolicy
from dihera.render import RenderSettings
from dihera.render.objects import membership_configmap, service
from tests.unit.jobviews import JOB, MEMBERSHIP, REPLICAS, T1, dijob, pod, running, workflow

SETTINGS = RenderSettings()
RUNNING = {"phase": "Running", "workflowName": JOB, "membershipGeneration": 1}


def view(status: dict[str, Any] | None = RUNNING, **kw: Any) -> JobView:
    """A running job as it should be (its Workflow, ConfigMap and Service as rendered), then ``kw``."""
    job = kw.pop("job", dijob())
    body: dict[str, Any] = {"metadata": {"name": JOB, "namespace": "ns", "uid": "job-uid", "generation": 1}}
    if status is not None:
        body["status"] = dict(status)
    fields: dict[str, Any] = {
        "membership": MEMBERSHIP,
        "workflow": workflow(),
        "pods": tuple(running()),
        "configmap": membership_configmap(job, MEMBERSHIP, SETTINGS),
        "service": service(job),
    }
    fields.update(kw)
    return JobView(body, job, **fields)


def test_a_job_as_it_should_be_needs_nothing() -> None:
    assert plan_outside(view(), SETTINGS).empty


def test_a_copy_of_the_jobs_workflow_is_deleted_and_an_argo_suspend_suspends_the_dijob() -> None:
    copy_ = {"metadata": {"name": f"{JOB}-x7k2p", "labels": {"diengine/job": JOB}}}
    assert plan_outside(view(copies=(copy_,)), SETTINGS).copies == (f"{JOB}-x7k2p",)
    suspended = workflow()
    suspended["spec"]["suspend"] = True
    assert plan_outside(view(workflow=suspended), SETTINGS).suspend
    already = view(workflow=suspended, job=dataclasses.replace(dijob(), suspend=True))
    assert not plan_outside(already, SETTINGS).suspend  # the DIJob is suspended already: the hold deletes it


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"service": None}, "deleted"),
        ({"configmap": None}, "deleted"),
    ],
)
def test_a_deleted_service_or_configmap_is_created_again(change: dict[str, Any], why: str) -> None:
    plan = plan_outside(view(**change), SETTINGS)
    assert (plan.service if "service" in change else plan.membership) == why


def test_an_edited_service_or_node_list_is_put_back_naming_what_changed() -> None:
    edited = copy.deepcopy(service(dijob()))
    edited["spec"]["selector"] = {"app": "other"}
    assert plan_outside(view(service=edited), SETTINGS).service == "edited (spec.selector)"
    cm = copy.deepcopy(membership_configmap(dijob(), MEMBERSHIP, SETTINGS))
    cm["data"]["DI_NODES"] = "elsewhere"
    cm["metadata"].update(uid="cm", resourceVersion="7")
    assert plan_outside(view(configmap=cm), SETTINGS).membership == "edited (DI_NODES)"


def test_nothing_is_repaired_for_a_job_not_started_finished_or_held_without_its_workflow() -> None:
    assert plan_outside(view(status=None, service=None, configmap=None), SETTINGS).empty
    assert plan_outside(view(status={**RUNNING, "phase": "Succeeded"}, service=None), SETTINGS).empty
    held = view(status={**RUNNING, "phase": "Suspended"}, workflow=None, configmap=None)
    assert plan_outside(held, SETTINGS).membership is None  # nothing to rebuild it from while held


@pytest.mark.parametrize(("how", "cause"), [("Stop", "WorkflowStopped"), ("Terminate", "WorkflowTerminated")])
def test_a_workflow_stopped_from_outside_ends_the_job(how: str, cause: str) -> None:
    stopped = workflow()
    stopped["spec"]["shutdown"] = how
    decision = workflow_shut_down(facts(view(workflow=stopped), SuspendPlan(), T1))
    assert decision is not None and (decision.phase, decision.cause) == (Phase.FAILED, cause)
    assert f"spec.shutdown: {how}" in decision.message
    done = [pod(t, i, "Succeeded", False) if t == "learner" else pod(t, i) for t, i in REPLICAS]
    policy = SuccessPolicy(SuccessOperator.ANY, ("learner",))
    succeeded = view(workflow=stopped, pods=tuple(done), job=dataclasses.replace(dijob(), success_policy=policy))
    decision = workflow_shut_down(facts(succeeded, SuspendPlan(), T1))
    assert decision is not None and decision.phase is Phase.SUCCEEDED
    assert workflow_shut_down(facts(view(), SuspendPlan(), T1)) is None
