"""What a job may report into its DIJob's ``status.profilings``, and the map that results (pure).

A report (``POST /v2alpha1/job/{ns}.{name}/profilings``) comes from the job's pods, which run environment
code; a sweep's early stopping and ranking trust what it holds, and it lives in the DIJob, which etcd keeps
under 1.5 MiB. So a report is bounded in keys, names, nesting and size, and so is the map it is merged into
(a JSON merge patch, RFC 7386: a ``null`` removes a key). The bounds leave a wide margin over what the
project's own reporters send (examples/cartpole/cartpole_dqn/metrics.py):

- a sweep trial's evaluator: 4 keys (``evalReturn``, ``evalReturnBest``, ``evalIteration`` and
  ``evalReturnHistory``, its last 100 ``[iteration, return]`` pairs: about 3 KiB, nesting 2);
- the learner's checkpoint: 1 key (``checkpoint``: ``{iteration, path, replica, time, onTerm}``, under 1 KiB
  with a path of a few hundred characters, nesting 1).

Every problem of a report is named at once, with the field, the value's size and the bound.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from dihera.sweeps.sweep import METRIC_NAME

__all__ = [
    "MAX_DEPTH",
    "MAX_KEYS",
    "MAX_REPORT_BYTES",
    "MAX_REPORT_KEYS",
    "MAX_TOTAL_BYTES",
    "MAX_VALUE_BYTES",
    "ProfilingsConflict",
    "ProfilingsError",
    "bounded_merge",
    "merge",
    "report_problems",
]

#: Keys in one report (the example's evaluator sends 4, its learner 1).
MAX_REPORT_KEYS = 32
#: Keys in ``status.profilings`` once a report is merged (a sweep metric with its history and best, and the
#: checkpoint: 5 in the example).
MAX_KEYS = 128
#: One report, serialized as compact JSON (the evaluator's, with a 100-evaluation history: ~3 KiB).
MAX_REPORT_BYTES = 64 * 1024
#: One value of a report, serialized as compact JSON (the history: ~3 KiB; a checkpoint: < 1 KiB).
MAX_VALUE_BYTES = 16 * 1024
#: ``status.profilings`` once a report is merged, serialized (a DIJob must stay well under etcd's 1.5 MiB).
MAX_TOTAL_BYTES = 256 * 1024
#: Nesting of lists and objects in one value (the history ``[[iteration, value], ...]`` is 2, a checkpoint 1).
MAX_DEPTH = 8


class ProfilingsError(ValueError):
    """A report refused as it is: sending it again does not help. ``problems``: each one, named."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


class ProfilingsConflict(Exception):
    """Another writer changed the DIJob under every attempt to record a report (not recorded: send it again)."""


def _size(value: object) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def _deeper_than(value: object, limit: int) -> bool:
    """Whether lists and objects nest more than ``limit`` levels in ``value`` (iterative: no recursion)."""
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth + 1 > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def _value_problems(key: str, value: object) -> list[str]:
    where = f"status.profilings.{key}"
    if _deeper_than(value, MAX_DEPTH):
        return [f"{where}: nests lists and objects deeper than {MAX_DEPTH} levels"]
    size = _size(value)
    if size > MAX_VALUE_BYTES:
        return [f"{where}: {size} bytes as JSON, more than {MAX_VALUE_BYTES}"]
    return []


def report_problems(report: Mapping[str, object]) -> list[str]:
    """Everything wrong with ``report`` on its own: its key count, each key's name, each value's nesting and
    size, its size as a whole. Empty: the report is within bounds (the merged map is checked apart)."""
    problems = []
    if len(report) > MAX_REPORT_KEYS:
        problems.append(f"body: {len(report)} keys, more than {MAX_REPORT_KEYS} in one report")
    bad = [key for key in report if not METRIC_NAME.match(key)]
    for key in bad[:5]:
        shown = key if len(key) <= 80 else key[:77] + "..."
        problems.append(f"body key {shown!r}: must match {METRIC_NAME.pattern} (a status.profilings key)")
    if len(bad) > 5:
        problems.append(f"body: {len(bad) - 5} more keys not matching {METRIC_NAME.pattern}")
    for key, value in report.items():
        if key not in bad:
            problems.extend(_value_problems(key, value))
    if not problems and (size := _size(dict(report))) > MAX_REPORT_BYTES:
        problems.append(f"body: {size} bytes as JSON, more than {MAX_REPORT_BYTES} in one report")
    return problems


def merge(current: object, patch: object) -> object:
    """``patch`` applied to ``current`` as a JSON merge patch (RFC 7386), as the API server applies it."""
    if not isinstance(patch, dict):
        return patch
    return _merge_objects(current if isinstance(current, dict) else {}, patch)


def _merge_objects(current: Mapping[str, object], patch: Mapping[str, object]) -> dict[str, object]:
    """:func:`merge` of an object patch: a copy of ``current`` with each key of ``patch`` merged or removed."""
    out = dict(current)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge(out.get(key), value)
    return out


def bounded_merge(current: Mapping[str, object] | None, report: Mapping[str, object]) -> dict[str, object]:
    """``status.profilings`` once ``report`` (within bounds: :func:`report_problems`) is merged into
    ``current``; :class:`ProfilingsError` when it would hold more than :data:`MAX_KEYS` keys or
    :data:`MAX_TOTAL_BYTES` bytes and is larger than ``current`` (a map already past a bound, written before
    the bounds, may still shrink: a ``null`` removes a key)."""
    before = dict(current or {})
    merged = _merge_objects(before, report)
    problems = []
    if len(merged) > MAX_KEYS and len(merged) > len(before):
        problems.append(
            f"status.profilings: would hold {len(merged)} keys, more than {MAX_KEYS} "
            f"(it holds {len(before)}; a null value removes a key)"
        )
    size = _size(merged)
    if size > MAX_TOTAL_BYTES and size > _size(before):
        problems.append(
            f"status.profilings: would be {size} bytes as JSON, more than {MAX_TOTAL_BYTES} "
            f"(it is {_size(before)}; a null value removes a key)"
        )
    if problems:
        raise ProfilingsError(problems)
    return merged
