"""The bounds of a report into ``status.profilings`` (dihera.profilings): each one refused by name, the merged
map's, and what the project's own reporters send, which must pass with a wide margin."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from dihera.profilings import (
    MAX_DEPTH,
    MAX_KEYS,
    MAX_REPORT_BYTES,
    MAX_REPORT_KEYS,
    MAX_TOTAL_BYTES,
    MAX_VALUE_BYTES,
    ProfilingsError,
    bounded_merge,
    merge,
    report_problems,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "cartpole"))

from cartpole_dqn.metrics import HISTORY, CheckpointReporter, MetricsReporter


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


def _bytes(report: dict[str, Any]) -> int:
    return len(json.dumps(report, separators=(",", ":")).encode())


@pytest.mark.parametrize(
    ("report", "expected"),
    [
        pytest.param(
            {f"k{i}": i for i in range(MAX_REPORT_KEYS + 1)},
            f"body: {MAX_REPORT_KEYS + 1} keys, more than {MAX_REPORT_KEYS} in one report",
            id="keys",
        ),
        pytest.param({"": 1}, "body key '': must match", id="empty-key"),
        pytest.param({"a.b": 1}, "body key 'a.b': must match", id="dotted-key"),
        pytest.param({"x" * 63: 1}, f"body key '{'x' * 63}': must match", id="long-key"),
        pytest.param({"1st": 1}, "body key '1st': must match", id="digit-first"),
        pytest.param(
            {"deep": _nested(MAX_DEPTH + 1)},
            f"status.profilings.deep: nests lists and objects deeper than {MAX_DEPTH} levels",
            id="depth",
        ),
        pytest.param(
            {"big": "x" * MAX_VALUE_BYTES},
            f"status.profilings.big: {MAX_VALUE_BYTES + 2} bytes as JSON, more than {MAX_VALUE_BYTES}",
            id="value-bytes",
        ),
        pytest.param(
            {f"v{i}": "x" * (MAX_VALUE_BYTES - 100) for i in range(5)},
            f"more than {MAX_REPORT_BYTES} in one report",
            id="report-bytes",
        ),
    ],
)
def test_each_bound_of_a_report_is_refused_by_name(report: dict[str, Any], expected: str) -> None:
    problems = report_problems(report)
    assert len(problems) == 1 and expected in problems[0], problems


def test_every_problem_of_a_report_is_named_at_once() -> None:
    problems = report_problems({"ok": 1, "bad key": 1, "deep": _nested(MAX_DEPTH + 5), "big": "x" * MAX_VALUE_BYTES})
    assert [p.split(":")[0] for p in problems] == [
        "body key 'bad key'",
        "status.profilings.deep",
        "status.profilings.big",
    ]


def test_a_report_at_every_bound_passes() -> None:
    at = {f"k{i}": "x" for i in range(MAX_REPORT_KEYS - 2)}
    at |= {"deep": _nested(MAX_DEPTH), "big": "x" * (MAX_VALUE_BYTES - 2)}
    assert report_problems(at) == []
    assert report_problems({"gone": None, "x" * 62: 1}) == []


def test_a_very_deep_value_is_refused_without_recursion() -> None:
    assert "deeper than" in report_problems({"deep": _nested(100_000)})[0]


def test_merge_is_a_json_merge_patch() -> None:
    current = {"checkpoint": {"iteration": 1, "path": "a"}, "fps": 3, "old": 1}
    patch = {"checkpoint": {"iteration": 2, "onTerm": True}, "old": None, "new": [1]}
    assert merge(current, patch) == {"checkpoint": {"iteration": 2, "path": "a", "onTerm": True}, "fps": 3, "new": [1]}
    assert current["old"] == 1, "the current map is left as it was"


def test_the_merged_map_is_bounded_in_keys() -> None:
    full = {f"k{i}": i for i in range(MAX_KEYS)}
    assert bounded_merge(full, {"k0": 7}) == {**full, "k0": 7}  # replacing a key adds none
    with pytest.raises(ProfilingsError) as err:
        bounded_merge(full, {"another": 1})
    assert str(err.value) == (
        f"status.profilings: would hold {MAX_KEYS + 1} keys, more than {MAX_KEYS} "
        f"(it holds {MAX_KEYS}; a null value removes a key)"
    )
    assert len(bounded_merge(full, {"k0": None, "another": 1})) == MAX_KEYS  # make room first, in one report


def test_the_merged_map_is_bounded_in_bytes() -> None:
    value = "x" * (MAX_VALUE_BYTES - 100)
    current = {f"v{i}": value for i in range(MAX_TOTAL_BYTES // MAX_VALUE_BYTES)}
    with pytest.raises(ProfilingsError, match=rf"bytes as JSON, more than {MAX_TOTAL_BYTES} \(it is \d+;"):
        bounded_merge(current, {"more": value})
    assert "v0" not in bounded_merge(current, {"v0": None, "more": "x"})


def test_a_map_past_its_bounds_from_before_may_still_shrink() -> None:
    """A DIJob written before the bounds (the review's 50,000 keys): a report that adds nothing passes."""
    legacy = {f"k{i}": i for i in range(2 * MAX_KEYS)}
    assert len(bounded_merge(legacy, {"k0": None, "k1": 5})) == 2 * MAX_KEYS - 1
    with pytest.raises(ProfilingsError):
        bounded_merge(legacy, {"new": 1})


def test_the_project_reporters_fit_with_a_wide_margin() -> None:
    """The example's evaluator with a full history (large iterations, full-precision returns) and its learner's
    checkpoint with a 1,024-character path: both within a quarter of every bound (a 4,096-character path, Linux's
    PATH_MAX, passes too)."""
    evaluations: list[dict[str, Any]] = []
    metrics = MetricsReporter(lambda body: evaluations.append(dict(body)))
    for i in range(HISTORY + 20):
        metrics.evaluated(-123.45678901234567 - i, 10_000_000 + i, final=i == HISTORY + 19)
    # the reporter's thread may have sent some of the earlier evaluations too (when it ran is up to the
    # machine's load): the final one is the one with the newest iteration
    evaluation = max(evaluations, key=lambda body: body["evalIteration"])
    assert evaluation["evalIteration"] == 10_000_000 + HISTORY + 19
    saves: list[dict[str, Any]] = []
    checkpoints = CheckpointReporter(lambda body: None, "learner-0", send_final=lambda body: saves.append(dict(body)))
    checkpoints.saved(10_000_000, "/var/dihera/checkpoints/" + "p" * 1000, final=True)
    checkpoints.saved(10_000_000, "/" + "p" * 4095, final=True)
    checkpoint, longest = saves
    assert report_problems(longest) == []
    assert len(evaluation["evalReturnHistory"]) == HISTORY
    for report in (evaluation, checkpoint):
        assert report_problems(report) == []
        assert len(report) * 4 <= MAX_REPORT_KEYS and _bytes(report) * 4 <= MAX_VALUE_BYTES
    assert _bytes(evaluation) < 4 * 1024 and _bytes(checkpoint) < 2 * 1024
    merged = bounded_merge(evaluation, checkpoint)
    assert len(merged) * 4 <= MAX_KEYS and _bytes(merged) * 4 <= MAX_TOTAL_BYTES
