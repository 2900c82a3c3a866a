"""spec.suspend (pure): the plan for each observation, the resumed job, and what the status says."""

from __future__ import annotations

from typing import Any

import pytest

from dihera.controller.decide.hold import SuspendAction, plan_suspend, resumed_job
from dihera.membership import Membership, Replica
from dihera.validation import load_job
from tests.builders import job, task
from tests.unit.jobviews import T0, T1, observe, running, status_after, workflow

HOLD, STOP, WAIT, RESUME, NONE = (
    SuspendAction.HOLD,
    SuspendAction.STOP,
    SuspendAction.WAIT,
    SuspendAction.RESUME,
    SuspendAction.NONE,
)
WF = {"metadata": {"name": "j", "uid": "wf"}}
DELETING = {"metadata": {"name": "j", "uid": "wf", "deletionTimestamp": T0}}
NEW: dict[str, Any] = {"phase": "Pending"}
RUNNING = {"phase": "Running", "workflowName": "j"}
SUSPENDED = {"phase": "Suspended", "workflowName": "j"}
SUSPENDED_BEFORE_START = {"phase": "Suspended"}


@pytest.mark.parametrize(
    ("case", "suspend", "old", "wf", "foreign", "leftover", "action", "in_message"),
    [
        ("suspended before start", True, NEW, None, False, 0, HOLD, "nothing is created"),
        ("suspend a running job", True, RUNNING, WF, False, 0, STOP, "stopping the job's 3 replica(s)"),
        ("its Workflow is going", True, SUSPENDED, DELETING, False, 0, HOLD, "every replica is stopped"),
        ("suspended, nothing runs", True, SUSPENDED, None, False, 0, HOLD, "every replica is stopped"),
        ("another DIJob's Workflow is never deleted", True, RUNNING, WF, True, 0, HOLD, "every replica is stopped"),
        ("resume: Workflow still going", False, SUSPENDED, DELETING, False, 0, WAIT, "once its Workflow"),
        ("resume: pods still going", False, SUSPENDED, None, False, 2, WAIT, "once 2 pod(s)"),
        ("resume: all gone", False, SUSPENDED, None, False, 0, RESUME, None),
        ("resume before it ever started: created as new", False, SUSPENDED_BEFORE_START, None, False, 0, NONE, None),
        ("not suspended", False, RUNNING, WF, False, 0, NONE, None),
    ],
)
def test_plan_suspend(
    case: str,
    suspend: bool,
    old: dict[str, Any],
    wf: dict[str, Any] | None,
    foreign: bool,
    leftover: int,
    action: SuspendAction,
    in_message: str | None,
) -> None:
    plan = plan_suspend(suspend, old, wf, foreign, 3, leftover)
    assert plan.action is action, case
    if in_message is None:
        assert plan.message is None, case
    else:
        assert plan.message is not None and in_message in plan.message, (case, plan.message)


def test_the_resumed_job_runs_the_membership_it_was_suspended_with() -> None:
    edited = load_job(job(task("learner"), task("collector", replicas=5), name="j"))  # edited while suspended
    membership = Membership(3, (Replica(0, "learner", 0), Replica(1, "collector", 0), Replica(3, "collector", 2)))
    resumed = resumed_job(edited, membership)
    assert [(t.name, t.replicas) for t in resumed.tasks] == [("learner", 1), ("collector", 2)]
    assert resumed.tasks[1].template == edited.tasks[1].template and resumed.name == "j"


def test_a_suspended_job_is_suspended_whatever_its_pods_say_and_its_deadline_waits() -> None:
    message = "spec.suspend is true: stopping the job's 3 replica(s)"
    obs = observe(workflow(), running(), suspended=message, active_deadline_seconds=10)
    old = {"phase": "Running", "startTime": T0, "restarts": 2, "membershipGeneration": 1}
    update = status_after(obs, old, T1)  # a minute later: past the deadline
    assert update.status["phase"] == "Suspended" and update.status["conditions"][-1]["message"] == message
    assert update.status["restarts"] == 2 and update.wakeup is None and update.drops == ()
    assert [e.reason for e in update.events] == ["JobSuspended"] and update.events[0].type == "Normal"


def test_a_resumed_job_counts_its_deadline_from_the_resume_and_no_restart() -> None:
    obs = observe(workflow("Pending"), [], active_deadline_seconds=90)
    old = {"phase": "Suspended", "startTime": T0, "restarts": 2, "membershipGeneration": 1, "workflowName": "job"}
    update = status_after(obs, old, T1)
    assert update.status["phase"] == "Pending" and update.status["startTime"] == T1
    assert update.wakeup == 90.0 and update.status["restarts"] == 2 and update.restarts_added == 0
