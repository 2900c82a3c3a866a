"""Early stopping of a sweep's hopeless trials (pure): the median stopping rule.

A trial reports its metric's history, ``<metric>History``: ``[[iteration, value], ...]`` in its DIJob's
``status.profilings`` (the example's evaluator sends its last 100 evaluations). A running trial whose
newest report is at iteration ``i >= min_iterations`` is stopped when its best value up to ``i`` is worse
than the **median of the other trials' best values up to ``i``**, taken over the trials that have reported
at or beyond ``i`` — and at least ``min_trials`` of them have (Google Vizier's median stopping rule, on the
best value so far rather than the running mean: RL returns are noisy, and a trial that once did well is not
stopped for a bad evaluation). Comparing at matching iterations is what makes a late trial comparable with
the finished ones. A trial that Succeeded (an RL job ends so when it reaches its stop value, often before
another trial's iteration ``i``) counts at every later iteration with its final best: its best so far can
no longer change.
"""

from __future__ import annotations

import statistics
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dihera.sweeps.results import Goal

__all__ = [
    "ANNOTATION_STOPPED",
    "COMPLETE_PHASE",
    "LIVE_PHASES",
    "History",
    "MedianStopping",
    "StopDecision",
    "parse_history",
    "stop_decisions",
    "trials_to_stop",
]

#: A trial's DIJob phases in which it may be stopped: not ended, not suspended or queued.
LIVE_PHASES = ("Pending", "Starting", "Running", "Restarting", "Rescheduling")
#: A trial's DIJob phase after which its best so far is final (compared at any later iteration).
COMPLETE_PHASE = "Succeeded"
#: On a trial's DIJob stopped early (and suspended): why.
ANNOTATION_STOPPED = "diengine/stopped"

#: ``(iteration, value)`` pairs, as reported.
History = Sequence[tuple[int, float]]


def parse_history(raw: object) -> list[tuple[int, float]]:
    """A reported history (``[[iteration, value], ...]``) sorted by iteration; malformed entries are skipped."""
    out: list[tuple[int, float]] = []
    for item in raw if isinstance(raw, list) else []:
        if isinstance(item, list) and len(item) == 2 and not any(isinstance(x, bool) for x in item):
            try:
                out.append((int(item[0]), float(item[1])))
            except (TypeError, ValueError):
                continue
    return sorted(out)


def _last(history: History) -> int | None:
    return max((i for i, _ in history), default=None)


def _reached(history: History, iteration: int) -> bool:
    last = _last(history)
    return last is not None and last >= iteration


def _best_until(history: History, iteration: int, goal: Goal) -> float | None:
    values = [v for i, v in history if i <= iteration]
    if not values:
        return None
    return max(values) if goal is Goal.MAXIMIZE else min(values)


@dataclass(frozen=True)
class StopDecision:
    """Stop this trial: its best value and the others' median at ``iteration``, over ``compared`` trials."""

    iteration: int
    best: float
    median: float
    compared: int

    def reason(self, metric: str) -> str:
        return (
            f"median stopping rule at iteration {self.iteration}: best {metric} {self.best:.4g} is worse than "
            f"the median {self.median:.4g} of {self.compared} other trials at that iteration"
        )


@dataclass(frozen=True)
class MedianStopping:
    """Stop a trial that cannot win; ``min_iterations``: never before; ``min_trials``: others to compare with."""

    min_iterations: int = 1
    min_trials: int = 2

    def __post_init__(self) -> None:
        if self.min_iterations < 1 or self.min_trials < 1:
            raise ValueError(
                f"early stopping: min_iterations {self.min_iterations} and min_trials {self.min_trials} must be >= 1 "
                "(at iteration 0 every trial is its untrained policy)"
            )

    def decide(
        self, trial: History, others: Sequence[History], goal: Goal, complete: Sequence[History] = ()
    ) -> StopDecision | None:
        """Whether to stop the trial whose history is ``trial``, given the other trials' histories: ``others``
        still running or ended short of their goal, ``complete`` Succeeded (their best is final)."""
        iteration = _last(trial)
        if iteration is None or iteration < self.min_iterations:
            return None
        compared = [h for h in others if _reached(h, iteration)] + [h for h in complete if _last(h) is not None]
        bests = [_best_until(h, iteration, goal) for h in compared]
        peers = [b for b in bests if b is not None]
        own = _best_until(trial, iteration, goal)
        if own is None or len(peers) < self.min_trials:
            return None
        median = statistics.median(peers)
        worse = own < median if goal is Goal.MAXIMIZE else own > median
        return StopDecision(iteration, own, median, len(peers)) if worse else None

    def to_args(self) -> list[str]:
        return ["--min-iterations", str(self.min_iterations), "--min-trials", str(self.min_trials)]


def stop_decisions(
    histories: Mapping[str, History],
    running: Sequence[str],
    rule: MedianStopping,
    goal: Goal,
    complete: Collection[str] = (),
) -> dict[str, StopDecision]:
    """For each running trial (by name), the decision to stop it, compared with every other trial (those in
    ``complete`` Succeeded)."""
    out = {}
    for name in running:
        others = [h for other, h in histories.items() if other != name and other not in complete]
        done = [h for other, h in histories.items() if other != name and other in complete]
        decision = rule.decide(histories.get(name, ()), others, goal, done)
        if decision is not None:
            out[name] = decision
    return out


def trials_to_stop(
    jobs: Mapping[str, Mapping[str, Any]], metric: str, rule: MedianStopping, goal: Goal
) -> dict[str, StopDecision]:
    """Of a sweep's trial DIJobs (by name), those to stop now: each live trial not stopped yet, compared with
    every other trial's ``status.profilings.<metric>History``."""
    histories: dict[str, History] = {}
    running = []
    complete = set()
    for name, job in jobs.items():
        status = job.get("status") or {}
        histories[name] = parse_history((status.get("profilings") or {}).get(f"{metric}History"))
        stopped = ANNOTATION_STOPPED in ((job.get("metadata") or {}).get("annotations") or {})
        if status.get("phase") in LIVE_PHASES and not stopped:
            running.append(name)
        elif status.get("phase") == COMPLETE_PHASE:
            complete.add(name)
    return stop_decisions(histories, running, rule, goal, complete)
