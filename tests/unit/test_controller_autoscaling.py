"""Collector autoscaling in the controller: the Autoscaler's series and its change through the scaler
(dihera/controller/autoscaler.py), the decision in the status (decide/autoscaling.py: the condition beside the
phase's, its Events), with a fake scaler and recorded status.training."""

from __future__ import annotations

import dataclasses
from typing import Any

from dihera.constants import CONDITION_AUTOSCALING, AutoscaleReason
from dihera.controller.apply import phase_message
from dihera.controller.autoscaler import Autoscaler, reported_at
from dihera.controller.decide.autoscaling import with_autoscaling
from dihera.controller.decide.conditions import phase_condition, set_condition, set_phase_condition
from dihera.controller.decide.status import StatusUpdate, compute_status
from dihera.controller.decide.view import JobView
from dihera.errors import QuotaRefused
from dihera.model import Autoscaling, ScalingPolicy, ScalingRules
from dihera.rl.autoscale import AutoscaleDecision
from dihera.scaling import ScaleRequest
from tests.unit.jobviews import T1, T2, observe, running, workflow

SPEC = Autoscaling(
    max_replicas=4,
    target_replay_ratio=1.0,
    scale_up=ScalingRules(10, (ScalingPolicy("Pods", 4, 30),)),
    scale_down=ScalingRules(20, (ScalingPolicy("Pods", 1, 60),)),
)
EPOCH = 1767225600.0  # 2026-01-01T00:00:00Z


class FakeScaler:
    def __init__(self, error: Exception | None = None) -> None:
        self.requests: list[tuple[str, str, ScaleRequest]] = []
        self.error = error

    def scale(self, namespace: str, name: str, request: ScaleRequest, *, update_spec: bool = True) -> Any:
        self.requests.append((namespace, name, request))
        if self.error is not None:
            raise self.error
        return None


class Clock:
    def __init__(self) -> None:
        self.now = EPOCH

    def __call__(self) -> float:
        return self.now


def stamp(seconds: float) -> str:
    return f"2026-01-01T00:{int(seconds) // 60:02d}:{int(seconds) % 60:02d}Z"


def view(wait: float, ratio: float, at: float, phase: str = "Running", spec: Autoscaling | None = SPEC) -> JobView:
    """The job of tests.unit.jobviews (1 learner, 2 collectors), Running, its learner's figures reported at ``at``."""
    training = {"dataWaitFraction": wait, "replayRatio": ratio, "reportedAt": {"learner": stamp(at)}}
    old = {"phase": phase, "membershipGeneration": 1, "restarts": 0, "training": training}
    v = observe(workflow(), running()).view(old)
    assert v.job is not None
    tasks = tuple(dataclasses.replace(t, autoscaling=spec) if t.name == "collector" else t for t in v.job.tasks)
    return dataclasses.replace(v, job=dataclasses.replace(v.job, tasks=tasks))


def feed(scaler: FakeScaler, series: list[tuple[float, float]], every: float = 5.0) -> list[AutoscaleDecision | None]:
    clock = Clock()
    autoscaler = Autoscaler(scaler, clock)
    out = []
    for i, (wait, ratio) in enumerate(series):
        clock.now = EPOCH + i * every
        out.append(autoscaler.step(view(wait, ratio, i * every), {}))
    return out


def test_reported_at_reads_the_learner_s_rfc3339_time() -> None:
    assert reported_at({"reportedAt": {"learner": "2026-01-01T00:00:10Z"}}) == EPOCH + 10
    assert reported_at({"reportedAt": {"learner": "yesterday"}}) is None
    assert reported_at({}) is None


def test_a_starving_learner_gets_collectors_through_the_scale_path_once() -> None:
    scaler = FakeScaler()
    decisions = feed(scaler, [(0.7, 2.0)] * 5)
    assert [d.reason for d in decisions if d is not None][:2] == [AutoscaleReason.STABILIZING] * 2
    assert scaler.requests == [("ns", "job", ScaleRequest.set_replicas("collector", 4))]  # 2 * 0.8 / 0.3 = 5.3 → 4
    changed = [d for d in decisions if d is not None and d.changed]
    assert len(changed) == 1 and changed[0].reason is AutoscaleReason.COLLECTORS_ADDED


def test_a_noisy_series_scales_nothing() -> None:
    scaler = FakeScaler()
    feed(scaler, [(0.7, 2.0), (0.05, 0.3), (0.3, 1.0), (0.9, 1.0), (0.1, 0.2)] * 4)
    assert scaler.requests == []


def test_a_refused_change_is_held_and_said() -> None:
    scaler = FakeScaler(QuotaRefused("Kueue has no quota for 2 more collectors"))
    decisions = feed(scaler, [(0.7, 2.0)] * 5)
    last = decisions[-1]
    assert last is not None and last.reason is AutoscaleReason.SCALE_REFUSED and not last.changed
    assert "no quota" in last.message


def test_a_job_not_running_or_without_autoscaling_is_left_alone() -> None:
    scaler = FakeScaler()
    autoscaler = Autoscaler(scaler, Clock())
    assert autoscaler.step(view(0.9, 1.0, 0, phase="Rescheduling"), {}) is None
    assert autoscaler.step(view(0.9, 1.0, 0, spec=None), {}) is None
    assert scaler.requests == []


def decided(reason: AutoscaleReason, current: int = 2, desired: int = 2) -> AutoscaleDecision:
    return AutoscaleDecision(current, desired, reason, f"{reason.value}: collectors {current} → {desired}")


def running_update(old: dict[str, Any]) -> StatusUpdate:
    return compute_status(observe(workflow(), running()).view(old), observe(workflow(), running()).hold(), T1)


def test_the_condition_sits_before_the_phase_s_and_keeps_its_status_through_passes() -> None:
    update = with_autoscaling(running_update({"phase": "Running"}), decided(AutoscaleReason.WITHIN_TARGET), T1)
    conditions = update.status["conditions"]
    assert [c["type"] for c in conditions] == [CONDITION_AUTOSCALING, "Running"]
    assert conditions[0]["status"] == "True" and update.events == ()
    again = running_update(update.status)  # the next pass: the phase's policy keeps the other condition True
    assert again.status["conditions"][0]["status"] == "True"
    assert phase_condition(again.status)["type"] == "Running" and phase_message(again.status).startswith("all 3")


def test_a_change_posts_an_event_and_a_repeated_hold_does_not() -> None:
    added = with_autoscaling(running_update({"phase": "Running"}), decided(AutoscaleReason.COLLECTORS_ADDED, 2, 4), T1)
    assert [(e.type, e.reason) for e in added.events] == [("Normal", "CollectorsAdded")]
    stale = with_autoscaling(running_update(added.status), decided(AutoscaleReason.STALE_FIGURES), T2)
    assert [(e.type, e.reason) for e in stale.events] == [("Warning", "StaleFigures")]
    assert (
        stale.status["conditions"][0]["status"] == "False" and stale.status["conditions"][0]["lastTransitionTime"] == T2
    )
    still = with_autoscaling(running_update(stale.status), decided(AutoscaleReason.STALE_FIGURES), T2)
    assert still.events == ()


def test_set_condition_keeps_the_transition_time_unless_the_status_flips() -> None:
    first = set_condition([], "X", "True", "A", "m", T1)
    same = set_condition(first, "X", "True", "B", "n", T2)
    assert same[0]["lastTransitionTime"] == T1 and same[0]["reason"] == "B" and same[0]["lastUpdateTime"] == T2
    phases = set_phase_condition(same, "Running", "ok", T2)
    assert [(c["type"], c["status"]) for c in phases] == [("X", "True"), ("Running", "True")]
