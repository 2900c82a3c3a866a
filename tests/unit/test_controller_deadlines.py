"""activeDeadlineSeconds (pure): time arithmetic, the DeadlineExceeded phase, and when to look again."""

from __future__ import annotations

import pytest

from dihera.controller.decide.deadline import next_wakeup, parse_time, seconds_left
from dihera.model import SuccessOperator, SuccessPolicy
from tests.unit.jobviews import T0, T1, T2, observe, pod, running, status_after, workflow


@pytest.mark.parametrize(
    ("since", "seconds", "now", "left"),
    [
        (T0, 90, T1, 30.0),
        (T0, 60, T1, 0.0),
        (T0, 30, T2, -90.0),
        ("2026-01-01T00:00:00+00:00", 10, "2026-01-01T00:00:04Z", 6.0),
        (None, 10, T1, None),
        (T0, None, T1, None),
    ],
)
def test_seconds_left(since: str | None, seconds: int | None, now: str, left: float | None) -> None:
    assert seconds_left(since, seconds, now) == left


def test_parse_time_is_aware() -> None:
    assert parse_time(T0).utcoffset() is not None


@pytest.mark.parametrize(
    ("lefts", "expected"), [((None, 5.0, 2.0), 2.0), ((None,), None), ((-1.0, 0.0), None), ((3.0, -2.0), 3.0)]
)
def test_next_wakeup(lefts: tuple[float | None, ...], expected: float | None) -> None:
    assert next_wakeup(*lefts) == expected


RUNNING_SINCE_T0 = {"phase": "Running", "startTime": T0}


def test_start_time_is_recorded_once() -> None:
    first = status_after(observe(None, []), {}, T0)
    assert first.status["startTime"] == T0
    later = status_after(observe(workflow(), running()), first.status, T2)
    assert later.status["startTime"] == T0


def test_before_the_deadline_the_job_runs_and_asks_to_be_woken_at_it() -> None:
    update = status_after(observe(workflow(), running(), active_deadline_seconds=90), RUNNING_SINCE_T0, T1)
    assert update.status["phase"] == "Running" and update.wakeup == 30.0


def test_without_a_deadline_there_is_no_wakeup() -> None:
    assert status_after(observe(workflow(), running()), RUNNING_SINCE_T0, T1).wakeup is None


def test_past_the_deadline_the_job_fails_with_deadline_exceeded() -> None:
    update = status_after(observe(workflow(), running(), active_deadline_seconds=60), RUNNING_SINCE_T0, T1)
    s = update.status
    assert s["phase"] == "Failed" and s["completionTimestamp"] == T1 and update.wakeup is None
    message = s["conditions"][-1]["message"]
    assert "activeDeadlineSeconds 60" in message and "3 unfinished replica(s)" in message
    assert [(e.type, e.reason) for e in update.events] == [("Warning", "DeadlineExceeded")]


def test_the_deadline_applies_before_the_workflow_exists() -> None:
    update = status_after(observe(None, [], active_deadline_seconds=30), {"phase": "Pending", "startTime": T0}, T1)
    assert update.status["phase"] == "Failed"


def test_the_deadline_wins_over_a_success_seen_in_the_same_pass() -> None:
    """As in Kubernetes' Job controller: a job past its deadline is Failed, whatever else is seen."""
    done = [pod("learner", 0, "Succeeded", False), pod("collector", 0), pod("collector", 1)]
    obs = observe(
        workflow(), done, active_deadline_seconds=60, success_policy=SuccessPolicy(SuccessOperator.ANY, ("learner",))
    )
    assert status_after(obs, RUNNING_SINCE_T0, T2).status["phase"] == "Failed"


def test_a_finished_status_stays_final_past_the_deadline() -> None:
    old = {"phase": "Succeeded", "startTime": T0, "completionTimestamp": T1}
    update = status_after(observe(workflow(), running(), active_deadline_seconds=1), old, T2)
    assert not update.changed and update.status == old
