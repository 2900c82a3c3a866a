"""Scale errors say whether a retry can help (temporary vs permanent, as kopf's errors do)."""

from __future__ import annotations

import pytest

from dihera.errors import (
    InvalidScale,
    NotDiheraWorkflow,
    NotStarted,
    OutOfBounds,
    RetiredReplica,
    ScaleConflict,
    ScaleError,
    ScaleNotFound,
)


@pytest.mark.parametrize(
    ("kind", "retryable", "reason"),
    [
        (ScaleConflict, True, "conflict"),
        (InvalidScale, False, "invalid"),
        (OutOfBounds, False, "out-of-bounds"),
        (ScaleNotFound, False, "not-found"),
        (NotStarted, False, "conflict"),
        (NotDiheraWorkflow, False, "conflict"),
        (RetiredReplica, False, "conflict"),
    ],
)
def test_each_scale_error_is_retryable_or_permanent(kind: type[ScaleError], retryable: bool, reason: str) -> None:
    err = kind("why")
    assert isinstance(err, ScaleError)
    assert (err.retryable, err.reason, str(err)) == (retryable, reason, "why")


def test_a_reason_can_be_given() -> None:
    assert InvalidScale("the stored DIJob is invalid", "conflict").reason == "conflict"
