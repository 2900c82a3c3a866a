"""Collector autoscaling's decision (pure): from a recorded series of ``status.training`` samples, the task's
``autoscaling`` and the collectors' count, how many collectors the job should run, with its numbers and reason.

The signals (``status.training``, :mod:`dihera.shapes.training`):

- the learner's **data-wait fraction** ``w`` (share of its wall time spent waiting for data). Above the target
  ``W`` it starves: collectors are the bottleneck. If the learner's compute per iteration is fixed and the data
  arrives at a rate proportional to the collectors, ``c`` collectors giving ``w`` need
  ``c * (1 - W) / (1 - w)`` to bring the wait down to ``W`` (rounded up);
- the **replay ratio** ``r`` (samples consumed per env step collected). With the learner saturated (``w <= W``)
  and ``r`` below the target ``R``, collectors produce more than the learner uses: ``ceil(c * r / R)`` give it
  ``R`` (never below 1: at one collector such figures are a limit, ``ScaleLimited``, not "within target").

A change of less than :data:`TOLERANCE` (10%, HPA's) is no change.

**No flapping** (HPA's stabilization, stated for collectors):

1. Only figures reported *after the last change* count, at the current count: a change is judged on what the
   job does with its present collectors, never on figures of a count it no longer has.
2. Each sample gives a recommendation. Collectors are **added** to the *smallest* recommendation over the
   scale-up window and **removed** to the *largest* over the scale-down window, and only once the figures at the
   current count cover that window (the first of them is at least the window old). A one-off spike or lull
   never moves the count; a noisy series that crosses its target inside the window holds it.
3. HPA's rate policies then limit the change over each period (``Pods``: collectors; ``Percent``: percent of
   the count at the period's start; ``selectPolicy`` Max/Min/Disabled), from the recorded changes.
4. The bounds: ``autoscaling.minReplicas``/``maxReplicas`` and the job's ``spec.minReplicas``/``maxReplicas``
   less the other tasks' replicas. A count outside them is brought inside at once.
5. No figures, or figures older than ``staleAfterSeconds``: no change, and the decision says why.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from dihera.constants import AutoscaleReason
from dihera.model import Autoscaling, DIJob, ScalingRules
from dihera.shapes.training import TrainingStatus

__all__ = [
    "TOLERANCE",
    "AutoscaleDecision",
    "Bounds",
    "Sample",
    "ScaleChange",
    "collector_bounds",
    "decide_collectors",
    "recommend",
]

#: A recommended change of at most this share of the count is no change (HPA's default tolerance).
TOLERANCE = 0.1
#: The data-wait fraction is read as at most this, so a learner that only waits asks for a bounded count.
_MAX_WAIT = 0.99


@dataclass(frozen=True)
class Sample:
    """The job's ``status.training`` as the controller saw it: ``at`` is when the learner reported it (seconds,
    the clock of ``now``), ``collectors`` the collectors live then."""

    at: float
    training: TrainingStatus
    collectors: int


@dataclass(frozen=True)
class ScaleChange:
    """A change the autoscaler made: when, from how many collectors to how many."""

    at: float
    before: int
    after: int


@dataclass(frozen=True)
class Bounds:
    """The fewest and the most collectors, and what sets each (for the message)."""

    low: int
    high: int
    low_by: str = "autoscaling.minReplicas"
    high_by: str = "autoscaling.maxReplicas"

    def clamp(self, count: int) -> int:
        return max(self.low, min(self.high, count))


@dataclass(frozen=True)
class AutoscaleDecision:
    """How many collectors, why (:class:`~dihera.constants.AutoscaleReason`), and the figures it read."""

    current: int
    desired: int
    reason: AutoscaleReason
    message: str
    data_wait: float | None = None
    replay_ratio: float | None = None
    #: the count the stabilized figures recommend, before rate policies and bounds
    recommended: int | None = None
    samples: int = 0
    #: seconds until the same figures are judged differently (a window covered, the figures stale): the
    #: controller's next timed pass when no new report comes first (None: only new figures change it)
    recheck_after: float | None = None

    @property
    def changed(self) -> bool:
        return self.desired != self.current


def collector_bounds(job: DIJob, task: str, counts: Mapping[str, int]) -> Bounds:
    """The collector task's bounds: its autoscaling's, narrowed by the job's min/maxReplicas less the other
    tasks' replicas (``counts``: the live count of each task)."""
    spec = job.task(task).autoscaling
    assert spec is not None, f"task {task} has no autoscaling"
    others = sum(n for name, n in counts.items() if name != task)
    bounds = Bounds(spec.min_replicas, spec.max_replicas)
    if job.min_replicas is not None and job.min_replicas - others > bounds.low:
        bounds = Bounds(job.min_replicas - others, bounds.high, "spec.minReplicas", bounds.high_by)
    if job.max_replicas is not None and job.max_replicas - others < bounds.high:
        bounds = Bounds(bounds.low, max(job.max_replicas - others, bounds.low), bounds.low_by, "spec.maxReplicas")
    return bounds


def _finite(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def recommend(training: TrainingStatus, spec: Autoscaling, count: int) -> int | None:
    """The collectors one sample asks for at ``count`` (None: it has no data-wait fraction to judge by)."""
    wait = _finite(training.get("dataWaitFraction"))
    if wait is None:
        return None
    target = spec.target_data_wait_fraction
    if wait > target:
        factor = (1 - target) / (1 - min(wait, _MAX_WAIT))
        return math.ceil(count * factor - 1e-9) if factor > 1 + TOLERANCE else count
    ratio = _finite(training.get("replayRatio"))
    if spec.target_replay_ratio is None or ratio is None or ratio >= spec.target_replay_ratio:
        return count
    share = ratio / spec.target_replay_ratio
    return max(math.ceil(count * share - 1e-9), 1) if share < 1 - TOLERANCE else count


def _covering(samples: Sequence[Sample], window: float, now: float) -> list[Sample] | None:
    """The samples that held during the last ``window`` seconds (those in it and the one before it), or None
    while the series does not cover the window yet."""
    if not samples or samples[0].at > now - window:
        return None
    start = now - window
    before = [s for s in samples if s.at <= start]
    return [before[-1], *(s for s in samples if s.at > start)]


def _rate_limit(rules: ScalingRules, changes: Sequence[ScaleChange], current: int, now: float, up: bool) -> int | None:
    """The count HPA's rate policies allow in this direction (None: no change allowed, selectPolicy Disabled)."""
    if rules.select_policy == "Disabled":
        return None
    limits = []
    for policy in rules.policies:
        recent = [c for c in changes if c.at > now - policy.period_seconds]
        moved = sum(max(c.after - c.before, 0) if up else max(c.before - c.after, 0) for c in recent)
        start = current - moved if up else current + moved
        if policy.type == "Pods":
            limits.append(start + policy.value if up else start - policy.value)
        elif up:
            limits.append(math.ceil(start * (1 + policy.value / 100)))
        else:
            limits.append(int(start * (1 - policy.value / 100)))
    most_change = rules.select_policy == "Max"
    if up:
        return max(limits) if most_change else min(limits)
    return min(limits) if most_change else max(limits)


def _figures(training: TrainingStatus, spec: Autoscaling) -> str:
    wait = _finite(training.get("dataWaitFraction"))
    if wait is None:
        return "no data-wait fraction reported"
    said = [f"the learner waited for data {wait:.0%} of its time (target {spec.target_data_wait_fraction:.0%})"]
    ratio = _finite(training.get("replayRatio"))
    if ratio is not None:
        target = f" (target {spec.target_replay_ratio:g})" if spec.target_replay_ratio is not None else ""
        said.append(f"replay ratio {ratio:.3g}{target}")
    return ", ".join(said)


@dataclass(frozen=True)
class _Read:
    """What the series says at the current count: the samples, the newest, and each window's recommendation."""

    fresh: list[Sample]
    newest: TrainingStatus
    up: int | None  # the smallest recommendation over the scale-up window (None: window not covered)
    down: int | None  # the largest over the scale-down window


def _read(samples: Sequence[Sample], spec: Autoscaling, current: int, since: float, now: float) -> _Read | None:
    fresh = [s for s in samples if s.at > since and s.collectors == current]
    if not fresh:
        return None
    recs: dict[int, int] = {}
    for s in fresh:
        r = recommend(s.training, spec, current)
        if r is not None:
            recs[id(s)] = r

    def over(window: int) -> list[int] | None:
        held = _covering(fresh, window, now)
        values = [recs[id(s)] for s in held or () if id(s) in recs]
        return values if held is not None and values else None

    up, down = over(spec.scale_up.stabilization_window_seconds), over(spec.scale_down.stabilization_window_seconds)
    return _Read(fresh, fresh[-1].training, min(up) if up else None, max(down) if down else None)


def _hold(current: int, reason: AutoscaleReason, message: str, read: _Read | None = None) -> AutoscaleDecision:
    if read is None:
        return AutoscaleDecision(current, current, reason, message)
    t = read.newest
    return AutoscaleDecision(
        current, current, reason, message, _finite(t.get("dataWaitFraction")), _finite(t.get("replayRatio")),
        samples=len(read.fresh),
    )  # fmt: skip


def decide_collectors(
    samples: Sequence[Sample],
    spec: Autoscaling,
    current: int,
    bounds: Bounds,
    changes: Sequence[ScaleChange],
    now: float,
) -> AutoscaleDecision:
    """How many collectors the job should run now (the module docstring states the rule). ``samples`` and
    ``changes`` oldest first; ``now`` on the clock of their times."""
    if bounds.clamp(current) != current:
        desired = bounds.clamp(current)
        by = bounds.low_by if desired > current else bounds.high_by
        reason = AutoscaleReason.COLLECTORS_ADDED if desired > current else AutoscaleReason.COLLECTORS_REMOVED
        return AutoscaleDecision(current, desired, reason, f"collectors {current} → {desired}: {by} is {desired}")
    since = changes[-1].at if changes else -math.inf
    read = _read(samples, spec, current, since, now)
    if read is None:
        return _hold(current, AutoscaleReason.NO_FIGURES, f"{current} collectors: no status.training reported at "
                     "this count yet; holding")  # fmt: skip
    age = now - read.fresh[-1].at
    if age > spec.stale_after_seconds:
        return _hold(current, AutoscaleReason.STALE_FIGURES, f"{current} collectors: the newest figures are "
                     f"{age:.0f} s old (staleAfterSeconds {spec.stale_after_seconds}); holding", read)  # fmt: skip
    decision = _judge(read, spec, current, bounds, changes, now)
    return dataclasses.replace(decision, recheck_after=_recheck(read, spec, now))


def _recheck(read: _Read, spec: Autoscaling, now: float) -> float | None:
    """Seconds until a window's coverage or the figures' staleness changes the verdict."""
    first, newest = read.fresh[0].at, read.fresh[-1].at
    windows = (spec.scale_up.stabilization_window_seconds, spec.scale_down.stabilization_window_seconds)
    due = [first + w - now for w in windows] + [newest + spec.stale_after_seconds - now]
    ahead = [d for d in due if d > 0]
    return min(ahead) + 1.0 if ahead else None


def _judge(
    read: _Read, spec: Autoscaling, current: int, bounds: Bounds, changes: Sequence[ScaleChange], now: float
) -> AutoscaleDecision:
    """The decision on fresh figures: a stabilized change, or a hold saying why."""
    figures = f"{_figures(read.newest, spec)}; {len(read.fresh)} report(s) at {current} collectors"
    if read.up is not None and read.up > current:
        return _change(current, read.up, True, spec.scale_up, changes, bounds, now, figures, read)
    if read.down is not None and read.down < current:
        return _change(current, read.down, False, spec.scale_down, changes, bounds, now, figures, read)
    if current == 1 and _overproduces(read, spec, now):
        return _hold(current, AutoscaleReason.SCALE_LIMITED, f"1 collector: {figures}; the learner uses fewer "
                     "samples than one collector collects, and 1 is the fewest collectors a job runs; holding",
                     read)  # fmt: skip
    if _wants_change(read, spec, current):
        windows = f"{spec.scale_up.stabilization_window_seconds}/{spec.scale_down.stabilization_window_seconds} s"
        return _hold(current, AutoscaleReason.STABILIZING, f"{current} collectors: {figures}; the figures do not "
                     f"yet agree over the stabilization window ({windows}); holding", read)  # fmt: skip
    return _hold(current, AutoscaleReason.WITHIN_TARGET, f"{current} collectors: {figures}; within target", read)


def _overproduces(read: _Read, spec: Autoscaling, now: float) -> bool:
    """Whether every figure over the scale-down window has the learner saturated and the replay ratio below its
    target by more than :data:`TOLERANCE`: fewer collectors wanted, where ``recommend`` rounds up to one."""
    target = spec.target_replay_ratio
    held = _covering(read.fresh, spec.scale_down.stabilization_window_seconds, now)
    if target is None or not held:
        return False

    def low(t: TrainingStatus) -> bool:
        wait, ratio = _finite(t.get("dataWaitFraction")), _finite(t.get("replayRatio"))
        saturated = wait is not None and wait <= spec.target_data_wait_fraction
        return saturated and ratio is not None and ratio / target < 1 - TOLERANCE

    return all(low(s.training) for s in held)


def _wants_change(read: _Read, spec: Autoscaling, current: int) -> bool:
    newest = recommend(read.newest, spec, current)
    return newest is not None and newest != current


def _change(
    current: int,
    recommended: int,
    up: bool,
    rules: ScalingRules,
    changes: Sequence[ScaleChange],
    bounds: Bounds,
    now: float,
    figures: str,
    read: _Read,
) -> AutoscaleDecision:
    """The stabilized recommendation, limited by the direction's rate policies and the bounds."""
    direction = "scaleUp" if up else "scaleDown"
    limit = _rate_limit(rules, changes, current, now, up)
    notes = []
    desired = recommended
    if limit is None:
        desired = current
        notes.append(f"{direction}.selectPolicy is Disabled")
    elif (up and limit < desired) or (not up and limit > desired):
        desired = limit
        notes.append(f"limited to {limit} by {direction}'s policies")
    if bounds.clamp(desired) != desired:
        desired = bounds.clamp(desired)
        notes.append(f"{bounds.high_by if up else bounds.low_by} is {desired}")
    note = f" ({'; '.join(notes)})" if notes else ""
    t = read.newest
    wait, ratio = _finite(t.get("dataWaitFraction")), _finite(t.get("replayRatio"))
    if desired == current:
        message = f"{current} collectors: {figures}; {recommended} recommended{note}; holding"
        return AutoscaleDecision(current, current, AutoscaleReason.SCALE_LIMITED, message, wait, ratio, recommended,
                                 len(read.fresh))  # fmt: skip
    reason = AutoscaleReason.COLLECTORS_ADDED if up else AutoscaleReason.COLLECTORS_REMOVED
    why = "the learner starves" if up else "the learner is saturated and samples pile up"
    message = f"collectors {current} → {desired}: {why}: {figures}; {recommended} recommended{note}"
    return AutoscaleDecision(current, desired, reason, message, wait, ratio, recommended, len(read.fresh))
