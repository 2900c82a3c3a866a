"""A failure message names a few replicas and counts the rest (a 2,000-replica job's status stays short)."""

from __future__ import annotations

from dihera.controller.decide.failures import FAILURES_NAMED, describe_failures
from dihera.controller.decide.replicas import ReplicaState


def failed(index: int) -> ReplicaState:
    return ReplicaState("collector", index, index + 1, f"j-collector-{index}", 0, failed=True, exit_code=3)


def test_a_few_failures_are_all_named() -> None:
    message = describe_failures([failed(0), failed(1)])
    assert message == (
        "replica collector-0 (rank 1) failed with exit code 3; replica collector-1 (rank 2) failed with exit code 3"
    )


def test_many_failures_name_the_first_and_count_the_rest() -> None:
    message = describe_failures([failed(i) for i in range(2000)])
    assert message.count("failed with exit code 3") == FAILURES_NAMED
    assert "replica collector-4 (rank 5)" in message and "collector-5 " not in message
    assert message.endswith("; and 1,995 more") and len(message) < 400
