"""The CartPole example's pure parts (no DI-engine needed): role choice, the log lines, the progress file."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "cartpole"))

from cartpole_dqn.report import line, write_progress
from cartpole_dqn.roles import barrier_timeout, pick_role, world_size


@pytest.mark.parametrize(
    ("labels", "node_id", "role"),
    [
        ({"learner"}, 3, "learner"),
        ({"collector", "gpu"}, 0, "collector"),
        ({"evaluator"}, 0, "evaluator"),
        (set(), 0, "learner"),
        (set(), 1, "evaluator"),
        ({"other"}, 2, "collector"),
        ((), 7, "collector"),
    ],
)
def test_role_comes_from_labels_then_node_id(labels: set[str], node_id: int, role: str) -> None:
    assert pick_role(labels, node_id) == role


def test_two_role_labels_are_refused_with_the_choices() -> None:
    with pytest.raises(ValueError, match=r"\['collector', 'learner'\].*exactly one of"):
        pick_role({"learner", "collector"}, 0)


def test_world_size_counts_vacant_entries() -> None:
    assert world_size("a,b,c,d") == 4
    assert world_size("a,,c") == 3
    assert world_size("") == 1


def test_contract_lines_keep_field_order_and_round_floats() -> None:
    assert line("eval", **{"return": 195.0, "iter": 40}) == "dihera-eval return=195.000 iter=40"
    assert line("progress", role="learner", iter=20, env_step=96) == "dihera-progress role=learner iter=20 env_step=96"


def test_progress_file_gets_capped_fractions(tmp_path: Path) -> None:
    target = tmp_path / "progress"
    write_progress(20, 2000, str(target))
    write_progress(2500, 2000, str(target))
    assert target.read_text().splitlines() == ["20/2000", "2000/2000"]


def test_progress_file_is_optional(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ARGO_PROGRESS_FILE", raising=False)
    write_progress(1, 10)
    monkeypatch.setenv("ARGO_PROGRESS_FILE", str(tmp_path / "p"))
    write_progress(1, 10)
    assert (tmp_path / "p").read_text() == "1/10\n"


@pytest.mark.parametrize(
    ("environ", "timeout"),
    [
        ({}, 300.0),
        ({"DIHERA_BARRIER_TIMEOUT": "60"}, 60.0),
        ({"DIHERA_BARRIER_TIMEOUT": "60", "DI_MEMBERSHIP_GENERATION": "1"}, 60.0),
        ({"DIHERA_BARRIER_TIMEOUT": "60", "DI_MEMBERSHIP_GENERATION": "3"}, 0.0),  # joined a running job
        ({"DI_MEMBERSHIP_GENERATION": ""}, 300.0),
    ],
)
def test_barrier_is_skipped_by_a_replica_joining_after_a_membership_change(
    environ: dict[str, str], timeout: float
) -> None:
    assert barrier_timeout(environ) == timeout
