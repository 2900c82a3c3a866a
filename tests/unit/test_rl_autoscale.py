"""Collector autoscaling's decision (dihera/rl/autoscale.py) on recorded series of status.training: a starving
learner, a saturated one, noisy and flapping series, missing and stale reports, bounds, rate policies."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from dihera.constants import AutoscaleReason
from dihera.model import Autoscaling, ScalingPolicy, ScalingRules
from dihera.rl.autoscale import (
    AutoscaleDecision,
    Bounds,
    Sample,
    ScaleChange,
    collector_bounds,
    decide_collectors,
    recommend,
)
from dihera.shapes.training import TrainingStatus
from dihera.validation import load_job
from tests.builders import job, task

#: Fast windows, so a series of a few reports covers them.
FAST = Autoscaling(
    max_replicas=4,
    target_data_wait_fraction=0.2,
    target_replay_ratio=1.0,
    scale_up=ScalingRules(20, (ScalingPolicy("Pods", 4, 30),)),
    scale_down=ScalingRules(40, (ScalingPolicy("Pods", 1, 60),)),
)
BOUNDS = Bounds(1, 4)


def fig(wait: float | None, ratio: float | None = None) -> TrainingStatus:
    out: TrainingStatus = {}
    if wait is not None:
        out["dataWaitFraction"] = wait
    if ratio is not None:
        out["replayRatio"] = ratio
    return out


def series(values: Sequence[tuple[float | None, float | None]], count: int, every: float = 5.0) -> list[Sample]:
    """A report every ``every`` seconds from t=0, all at ``count`` collectors."""
    return [Sample(i * every, fig(w, r), count) for i, (w, r) in enumerate(values)]


def decide(
    samples: list[Sample],
    current: int,
    now: float,
    spec: Autoscaling = FAST,
    changes: Sequence[ScaleChange] = (),
    bounds: Bounds = BOUNDS,
) -> AutoscaleDecision:
    return decide_collectors(samples, spec, current, bounds, changes, now)


def test_recommend_adds_what_brings_the_wait_to_its_target() -> None:
    assert recommend(fig(0.8), FAST, 1) == 4  # 1 * (1 - 0.2) / (1 - 0.8)
    assert recommend(fig(0.6), FAST, 2) == 4  # 2 * 0.8 / 0.4
    assert recommend(fig(0.21), FAST, 3) == 3  # within tolerance
    assert recommend(fig(1.0), FAST, 1) == 80  # a learner that only waits: bounded by _MAX_WAIT, then by policies
    assert recommend(fig(0.1, 0.25), FAST, 4) == 1  # saturated, 4x the samples it uses
    assert recommend(fig(0.1, 0.5), FAST, 3) == 2
    assert recommend(fig(0.1, None), FAST, 3) == 3  # no replay ratio: never removes
    assert recommend(fig(None, 0.1), FAST, 3) is None


def test_a_starving_learner_gets_collectors_once_the_up_window_is_covered() -> None:
    s = series([(0.8, 4.0)] * 5, count=1)  # t = 0..20
    early = decide(s[:3], 1, now=12.0)
    assert early.desired == 1 and early.reason is AutoscaleReason.STABILIZING
    assert early.recheck_after == 9.0  # the 20 s up-window is covered 8 s later (+1)
    d = decide(s, 1, now=21.0)
    assert (d.desired, d.reason, d.recommended) == (4, AutoscaleReason.COLLECTORS_ADDED, 4)
    assert "waited for data 80%" in d.message and "collectors 1 → 4" in d.message


def test_a_saturated_learner_loses_collectors_slowly() -> None:
    s = series([(0.05, 0.25)] * 10, count=4)  # t = 0..45
    d = decide(s, 4, now=45.0)
    assert (d.desired, d.reason, d.recommended) == (3, AutoscaleReason.COLLECTORS_REMOVED, 1)
    assert "limited to 3 by scaleDown's policies" in d.message


def test_a_saturated_learner_at_one_collector_is_a_limit_not_within_target() -> None:
    s = series([(0.05, 0.25)] * 10, count=1)  # t = 0..45: a quarter of what one collector collects is used
    early = decide(s[:5], 1, now=20.0)  # the 40 s down-window not covered yet
    assert (early.desired, early.reason) == (1, AutoscaleReason.WITHIN_TARGET)
    d = decide(s, 1, now=45.0)
    assert (d.desired, d.reason) == (1, AutoscaleReason.SCALE_LIMITED)
    assert "replay ratio 0.25 (target 1)" in d.message and "1 is the fewest collectors" in d.message
    mixed = series([(0.05, 0.25)] * 9 + [(0.05, 0.95)], count=1)  # the newest within tolerance
    assert decide(mixed, 1, now=45.0).reason is AutoscaleReason.WITHIN_TARGET
    starving = series([(0.5, 0.25)] * 10, count=1)  # the learner waits: not saturated, so not over-produced
    assert decide(starving, 1, now=45.0).reason is not AutoscaleReason.SCALE_LIMITED


def test_a_noisy_series_around_the_target_never_moves_the_count() -> None:
    noisy = [(0.7, 2.0), (0.1, 2.0), (0.05, 0.2), (0.6, 0.5), (0.15, 2.0)] * 4  # spikes both ways
    s = series(noisy, count=2)
    for end in range(1, len(s) + 1):
        d = decide(s[:end], 2, now=s[end - 1].at + 1)
        assert d.desired == 2, (end, d)


def test_a_spike_shorter_than_the_window_is_ignored_and_a_lasting_one_is_not() -> None:
    calm = [(0.1, 1.0)] * 6
    spike = series(calm + [(0.9, 1.0)] * 2 + calm, count=2)
    assert all(decide(spike[:e], 2, now=spike[e - 1].at).desired == 2 for e in range(1, len(spike) + 1))
    lasting = series(calm + [(0.9, 1.0)] * 6, count=2)
    assert decide(lasting, 2, now=lasting[-1].at).desired == 4


def test_missing_and_stale_reports_hold_and_say_why() -> None:
    d = decide([], 2, now=100.0)
    assert (d.desired, d.reason) == (2, AutoscaleReason.NO_FIGURES)
    s = series([(0.9, 1.0)] * 6, count=2)
    stale = decide(s, 2, now=s[-1].at + 61)
    assert (stale.desired, stale.reason) == (2, AutoscaleReason.STALE_FIGURES)
    assert "61 s old" in stale.message and stale.recheck_after is None
    fresh = decide(s, 2, now=s[-1].at + 50)
    assert fresh.recheck_after == 11.0  # stale 10 s later (+1): a timed pass notices it without a new report
    no_wait = series([(None, 0.1)] * 10, count=2)
    assert decide(no_wait, 2, now=50.0).desired == 2


def test_figures_from_before_the_last_change_do_not_count() -> None:
    s = series([(0.9, 1.0)] * 10, count=1)  # all at 1 collector
    d = decide(s, 2, now=45.0, changes=(ScaleChange(30.0, 1, 2),))
    assert (d.desired, d.reason) == (2, AutoscaleReason.NO_FIGURES)
    after = s + [Sample(50.0 + 5 * i, fig(0.9, 1.0), 2) for i in range(6)]  # t = 50..75 at 2 collectors
    d = decide(after, 2, now=75.0, changes=(ScaleChange(30.0, 1, 2),))
    assert d.desired == 4 and d.samples == 6


def test_rate_policies_count_the_changes_of_their_period() -> None:
    spec = Autoscaling(max_replicas=10, scale_up=ScalingRules(0, (ScalingPolicy("Pods", 2, 60),)))
    s = [Sample(100.0, fig(0.9), 3)]
    recent = (ScaleChange(80.0, 1, 3),)  # 2 added 20 s ago: the period's budget is spent
    d = decide(s, 3, now=101.0, spec=spec, changes=recent, bounds=Bounds(1, 10))
    assert (d.desired, d.reason) == (3, AutoscaleReason.SCALE_LIMITED)
    later = (ScaleChange(30.0, 1, 3),)
    assert decide(s, 3, now=101.0, spec=spec, changes=later, bounds=Bounds(1, 10)).desired == 5


@pytest.mark.parametrize(("select", "expected"), [("Max", 6), ("Min", 4), ("Disabled", 3)])
def test_select_policy_picks_the_largest_or_smallest_change(select: str, expected: int) -> None:
    rules = ScalingRules(0, (ScalingPolicy("Pods", 1, 60), ScalingPolicy("Percent", 100, 60)), select)
    spec = Autoscaling(max_replicas=10, scale_up=rules)
    d = decide([Sample(0.0, fig(0.95), 3)], 3, now=1.0, spec=spec, bounds=Bounds(1, 10))
    assert d.desired == expected


def test_bounds_cap_the_change_and_bring_a_count_outside_them_inside() -> None:
    s = series([(0.95, 1.0)] * 6, count=4)
    d = decide(s, 4, now=25.0)
    assert (d.desired, d.reason) == (4, AutoscaleReason.SCALE_LIMITED)
    assert "autoscaling.maxReplicas is 4" in d.message
    over = decide([], 6, now=0.0)
    assert (over.desired, over.reason) == (4, AutoscaleReason.COLLECTORS_REMOVED)


def test_collector_bounds_narrow_to_the_job_s_min_and_max() -> None:
    auto = {"autoscaling": {"minReplicas": 1, "maxReplicas": 8}}
    j = load_job(job(task("learner"), {**task("collector", "collector", replicas=2), **auto}, maxReplicas=6))
    b = collector_bounds(j, "collector", {"learner": 1, "collector": 2})
    assert (b.low, b.high, b.high_by) == (1, 5, "spec.maxReplicas")
