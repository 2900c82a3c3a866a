"""Every example in workflows/ renders to its committed golden file, byte for byte."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.golden import examples, golden_path, rendered_text, sweep_examples


def test_there_are_examples() -> None:
    assert {p.stem for p in examples()} >= {"job-with-tasks", "atari-dqn", "serial"}
    assert {p.stem for p in sweep_examples()} >= {"cartpole_sweep"}


@pytest.mark.parametrize("example", [*examples(), *sweep_examples()], ids=lambda p: p.stem)
def test_golden(example: Path) -> None:
    golden = golden_path(example)
    assert golden.exists(), f"{golden} missing: run `make generate`"
    assert golden.read_text(encoding="utf-8") == rendered_text(example), f"{golden.name} is stale: run `make generate`"
