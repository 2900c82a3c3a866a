"""A sweep's results (pure): one row per trial, then per configuration the mean over its seeds with a 95 %
confidence interval, the best configuration, as CSV and Markdown.

The interval is Student's t: ``mean ± t(0.975, n - 1) · s / √n`` over the configuration's seeds that
reported the metric (none with one seed: RL results over one seed mislead). A configuration ranks by
its mean; ``goal`` says whether higher (``maximize``) or lower is better.
"""

from __future__ import annotations

import csv
import io
import json
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from dihera.sweeps.space import Value

__all__ = ["ConfigSummary", "Goal", "TrialResult", "best", "by_configuration", "csv_table", "markdown_table", "t975"]

#: t(0.975, df) for df = 1..30 (Student's t, two-sided 95 %); above 30 the normal 1.96 (about 4 % narrow at
#: df 31, 2 % at 60: sweeps rarely have 30 seeds per configuration).
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


class Goal(StrEnum):
    MAXIMIZE = "maximize"
    MINIMIZE = "minimize"


def t975(df: int) -> float:
    """Student's t quantile for a two-sided 95 % interval with ``df`` degrees of freedom (``df >= 1``)."""
    if df < 1:
        raise ValueError(f"degrees of freedom {df} must be at least 1")
    return _T975[df - 1] if df <= len(_T975) else 1.96


@dataclass(frozen=True)
class TrialResult:
    """What one trial's DIJob ended with."""

    index: int
    job: str
    values: Mapping[str, Value]
    seed: int
    phase: str
    metric: float | None
    seconds: float | None
    #: the index of its configuration (None: grouped by its values)
    configuration: int | None = None
    #: what it reported over time, ``(iteration, value)`` sorted by iteration (``<metric>History``)
    history: tuple[tuple[int, float], ...] = ()


@dataclass(frozen=True)
class ConfigSummary:
    """A configuration over its seeds: how many reported the metric, their mean and the interval's half width."""

    values: Mapping[str, Value]
    trials: int
    reported: int
    mean: float | None
    half_width: float | None


def _key(result: TrialResult) -> str:
    if result.configuration is not None:
        return str(result.configuration)
    return json.dumps(dict(result.values), sort_keys=True)


def by_configuration(results: Sequence[TrialResult]) -> list[ConfigSummary]:
    """Per configuration (in the order of their first trial), the mean metric and its 95 % interval. A
    stopped or failed trial counts with the last value it reported."""
    groups: dict[str, list[TrialResult]] = {}
    for r in sorted(results, key=lambda r: r.index):
        groups.setdefault(_key(r), []).append(r)
    out = []
    for rows in groups.values():
        metrics = [r.metric for r in rows if r.metric is not None and math.isfinite(r.metric)]
        mean = statistics.fmean(metrics) if metrics else None
        half = None
        if len(metrics) > 1:
            half = t975(len(metrics) - 1) * statistics.stdev(metrics) / math.sqrt(len(metrics))
        out.append(ConfigSummary(rows[0].values, len(rows), len(metrics), mean, half))
    return out


def best(summaries: Sequence[ConfigSummary], goal: Goal) -> ConfigSummary | None:
    """The configuration with the best mean (the first of equals); None when no trial reported the metric."""
    ranked = [s for s in summaries if s.mean is not None]
    if not ranked:
        return None
    sign = 1.0 if goal is Goal.MAXIMIZE else -1.0
    return max(ranked, key=lambda s: sign * (s.mean or 0.0))


def _num(x: float | None, digits: int = 4) -> str:
    return "" if x is None else f"{x:.{digits}g}"


def _text(v: Value) -> str:
    return json.dumps(v) if isinstance(v, bool) else str(v)


def csv_table(results: Sequence[TrialResult], metric: str) -> str:
    """One row per trial: index, job, each parameter, seed, the metric, phase, seconds."""
    names = list(results[0].values) if results else []
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["trial", "job", *names, "seed", metric, "phase", "seconds"])
    for r in sorted(results, key=lambda r: r.index):
        values = [_text(r.values[n]) for n in names]
        writer.writerow([r.index, r.job, *values, r.seed, _num(r.metric, 8), r.phase, _num(r.seconds, 6)])
    return out.getvalue()


def markdown_table(results: Sequence[TrialResult], metric: str, goal: Goal) -> str:
    """The trials' table, then the configurations' (mean ± 95 % interval over seeds), then the best."""
    names = list(results[0].values) if results else []
    lines = [
        f"| trial | {' | '.join(names)} | seed | {metric} | phase | seconds |",
        "|---" * (len(names) + 5) + "|",
    ]
    for r in sorted(results, key=lambda r: r.index):
        values = [_text(r.values[n]) for n in names]
        cells = [str(r.index), *values, str(r.seed), _num(r.metric), r.phase, _num(r.seconds)]
        lines.append(f"| {' | '.join(cells)} |")
    summaries = by_configuration(results)
    header = f"| {' | '.join(names)} | seeds reported | mean {metric} | 95 % CI |"
    lines += ["", header, "|---" * (len(names) + 3) + "|"]
    for s in summaries:
        ci = ""
        if s.half_width is not None and s.mean is not None:
            ci = f"{_num(s.mean - s.half_width)} .. {_num(s.mean + s.half_width)}"
        cells = [*(_text(s.values[n]) for n in names), f"{s.reported}/{s.trials}", _num(s.mean), ci]
        lines.append(f"| {' | '.join(cells)} |")
    top = best(summaries, goal)
    chosen = "none: no trial reported the metric" if top is None else json.dumps(dict(top.values), sort_keys=True)
    lines += ["", f"best ({goal.value} mean {metric}): {chosen}"]
    return "\n".join(lines) + "\n"


def best_values(results: Sequence[TrialResult], metric: str, goal: Goal) -> dict[str, object]:
    """The summary's ``best`` output: the best configuration's values, its mean ``metric`` over its seeds, the
    95 % interval's half width and how many seeds reported; empty when none reported."""
    top = best(by_configuration(results), goal)
    if top is None:
        return {}
    return {"values": dict(top.values), metric: top.mean, "halfWidth": top.half_width, "seeds": top.reported}
