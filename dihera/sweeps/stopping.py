"""Early stopping of a sweep's hopeless trials (pure): the median stopping rule and successive halving.

A trial reports its metric's history, ``<metric>History``: ``[[iteration, value], ...]`` in its DIJob's
``status.profilings`` (the example's evaluator sends its last 100 evaluations). Both rules compare best
values so far at matching iterations (RL returns are noisy: a trial that once did well is not stopped for a
bad evaluation; matching iterations make a late trial comparable with finished ones), over the other trials
that reported at or beyond that iteration, at least ``min_trials`` of them. A trial that ended (Succeeded —
an RL job ends so at its stop value, often before another trial's iteration —, Failed, or stopped by the
rule) counts at every later iteration with its final best: its best so far can no longer change (Vizier
compares with completed trials so). A trial is judged on the reports it kept (the example's evaluator
keeps its last 100; a restarted evaluator starts again).

- **Median stopping** (Google Vizier's), :class:`MedianStopping`: a running trial whose newest report is at
  iteration ``i >= min_iterations`` is stopped when its best up to ``i`` is worse than the median of the
  other trials' bests up to ``i``.
- **Successive halving**, asynchronous (ASHA, Li et al. 2020; Ray Tune's ``ASHAScheduler`` stops trials
  the same way), :class:`SuccessiveHalving`: rungs at ``min_iterations · reduction^k``; a trial at or past
  a rung is stopped when its best up to that rung is worse than the cutoff of the best
  ``1/reduction`` of the trials that reached the rung (itself included): it keeps a third of the trials at
  each rung with ``reduction`` 3. The daemon holds no state, so a trial is judged at every rung it passed,
  again as more trials reach them (ASHA decides once, on arrival; this can only stop more).
"""

from __future__ import annotations

import statistics
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from dihera.shapes.dijob import as_dijob
from dihera.sweeps.results import Goal

__all__ = [
    "ANNOTATION_STOPPED",
    "ENDED_PHASES",
    "LIVE_PHASES",
    "History",
    "MedianStopping",
    "StopDecision",
    "StoppingRule",
    "SuccessiveHalving",
    "parse_history",
    "stop_decisions",
    "trials_to_stop",
]

#: A trial's DIJob phases in which it may be stopped: not ended, not suspended or queued.
LIVE_PHASES = ("Pending", "Starting", "Running", "Restarting", "Rescheduling")
#: A trial's DIJob phases after which its best so far is final (compared at any later iteration); so is a
#: trial stopped by the rule (ANNOTATION_STOPPED).
ENDED_PHASES = ("Succeeded", "Failed")
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
    """Stop this trial: its ``best`` value at ``iteration``, worse than ``threshold`` (the median of the other
    trials', or successive halving's cutoff at a rung: ``reduction`` set), over ``compared`` trials."""

    iteration: int
    best: float
    threshold: float
    compared: int
    reduction: int | None = None

    def reason(self, metric: str) -> str:
        if self.reduction is None:
            return (
                f"median stopping rule at iteration {self.iteration}: best {metric} {self.best:.4g} is worse than "
                f"the median {self.threshold:.4g} of {self.compared} other trials' best values up to that iteration"
            )
        return (
            f"successive halving at rung {self.iteration}: best {metric} {self.best:.4g} is worse than "
            f"{self.threshold:.4g}, the cutoff of the best 1/{self.reduction} of the {self.compared} trials at "
            "that rung"
        )


def _peers(iteration: int, others: Sequence[History], ended: Sequence[History], goal: Goal) -> list[float]:
    """The other trials' best values up to ``iteration``: the running ones that reached it, every ended one."""
    compared = [h for h in others if _reached(h, iteration)] + [h for h in ended if _last(h) is not None]
    return [b for b in (_best_until(h, iteration, goal) for h in compared) if b is not None]


def _quantile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile, linear between the closest ranks (numpy's default)."""
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


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
        self, trial: History, others: Sequence[History], goal: Goal, ended: Sequence[History] = ()
    ) -> StopDecision | None:
        """Whether to stop the trial whose history is ``trial``, given the other trials' histories: ``others``
        still running (or waiting), ``ended`` Succeeded, Failed or stopped (their best is final)."""
        iteration = _last(trial)
        if iteration is None or iteration < self.min_iterations:
            return None
        peers = _peers(iteration, others, ended, goal)
        own = _best_until(trial, iteration, goal)
        if own is None or len(peers) < self.min_trials:
            return None
        median = statistics.median(peers)
        worse = own < median if goal is Goal.MAXIMIZE else own > median
        return StopDecision(iteration, own, median, len(peers)) if worse else None

    def to_args(self) -> list[str]:
        return ["--min-iterations", str(self.min_iterations), "--min-trials", str(self.min_trials)]


@dataclass(frozen=True)
class SuccessiveHalving:
    """Stop a trial outside the best ``1/reduction`` at a rung (``min_iterations · reduction^k``);
    ``min_trials``: other trials at the rung before it decides."""

    min_iterations: int = 1
    reduction: int = 3
    min_trials: int = 2

    def __post_init__(self) -> None:
        if self.min_iterations < 1 or self.min_trials < 1:
            raise ValueError(
                f"early stopping: min_iterations {self.min_iterations} and min_trials {self.min_trials} must be >= 1 "
                "(the first rung: at iteration 0 every trial is its untrained policy)"
            )
        if self.reduction < 2:
            raise ValueError(f"early stopping: reduction {self.reduction} must be >= 2 (keep the best 1/reduction)")

    def rungs(self, iteration: int) -> list[int]:
        """The rungs at or below ``iteration``, lowest first (none before the first)."""
        out = []
        rung = self.min_iterations
        while rung <= iteration:
            out.append(rung)
            rung *= self.reduction
        return out

    def decide(
        self, trial: History, others: Sequence[History], goal: Goal, ended: Sequence[History] = ()
    ) -> StopDecision | None:
        """Whether to stop the trial whose history is ``trial``: at the lowest rung it passed where it is
        outside the best ``1/reduction`` (the other histories as in :meth:`MedianStopping.decide`)."""
        last = _last(trial)
        for rung in [] if last is None else self.rungs(last):
            decision = self._at(rung, trial, others, goal, ended)
            if decision is not None:
                return decision
        return None

    def _at(
        self, rung: int, trial: History, others: Sequence[History], goal: Goal, ended: Sequence[History]
    ) -> StopDecision | None:
        peers = _peers(rung, others, ended, goal)
        own = _best_until(trial, rung, goal)
        if own is None or len(peers) < self.min_trials:
            return None
        values = [*peers, own]
        keep = 1 / self.reduction
        cutoff = _quantile(values, 1 - keep if goal is Goal.MAXIMIZE else keep)
        worse = own < cutoff if goal is Goal.MAXIMIZE else own > cutoff
        return StopDecision(rung, own, cutoff, len(values), self.reduction) if worse else None

    def to_args(self) -> list[str]:
        return [
            "--rule", "halving", "--min-iterations", str(self.min_iterations), "--reduction", str(self.reduction),
            "--min-trials", str(self.min_trials),
        ]  # fmt: skip


#: An early-stopping rule of a sweep.
StoppingRule = MedianStopping | SuccessiveHalving


def stop_decisions(
    histories: Mapping[str, History],
    running: Sequence[str],
    rule: StoppingRule,
    goal: Goal,
    ended: Collection[str] = (),
) -> dict[str, StopDecision]:
    """For each running trial (by name), the decision to stop it, compared with every other trial (those in
    ``ended`` with their final best)."""
    out = {}
    for name in running:
        others = [h for other, h in histories.items() if other != name and other not in ended]
        done = [h for other, h in histories.items() if other != name and other in ended]
        decision = rule.decide(histories.get(name, ()), others, goal, done)
        if decision is not None:
            out[name] = decision
    return out


def trials_to_stop(
    jobs: Mapping[str, Mapping[str, object]], metric: str, rule: StoppingRule, goal: Goal
) -> dict[str, StopDecision]:
    """Of a sweep's trial DIJobs (by name), those to stop now: each live trial not stopped yet, compared with
    every other trial's ``status.profilings.<metric>History``."""
    histories: dict[str, History] = {}
    running = []
    ended = set()
    for name, raw in jobs.items():
        job = as_dijob(raw)
        status = job.get("status") or {}
        histories[name] = parse_history((status.get("profilings") or {}).get(f"{metric}History"))
        stopped = ANNOTATION_STOPPED in ((job.get("metadata") or {}).get("annotations") or {})
        if stopped or status.get("phase") in ENDED_PHASES:
            ended.add(name)
        elif status.get("phase") in LIVE_PHASES:
            running.append(name)
    return stop_decisions(histories, running, rule, goal, ended)
