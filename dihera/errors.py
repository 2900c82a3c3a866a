"""Error types: every problem names the field, the value and what would be valid."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "InvalidJobError",
    "InvalidScale",
    "NotDiheraWorkflow",
    "NotStarted",
    "OutOfBounds",
    "Problem",
    "QuotaRefused",
    "RetiredReplica",
    "ScaleConflict",
    "ScaleError",
    "ScaleNotFound",
    "format_value",
]


def format_value(value: object) -> str:
    """Short, stable rendering of a bad value for messages."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


@dataclass(frozen=True, order=True)
class Problem:
    """One thing wrong with a DIJob: where (``spec.tasks[2].name``), what, and the bad value."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class InvalidJobError(ValueError):
    """A DIJob failed validation. ``problems`` lists every problem found, not only the first."""

    def __init__(self, problems: list[Problem], source: str = "DIJob") -> None:
        self.problems = sorted(set(problems), key=lambda p: (p.path, p.message))
        self.source = source
        lines = "\n".join(f"  {p}" for p in self.problems)
        super().__init__(f"{source} is invalid ({len(self.problems)} problem(s)):\n{lines}")


class ScaleError(ValueError):
    """A scale request that was not applied; nothing was changed.

    ``retryable``: the same request may succeed later (:class:`ScaleConflict`); every other kind is
    permanent: retrying it changes nothing (one ``ScaleRefused`` Event, never a retry loop).
    ``reason`` (the di-server's HTTP status): ``invalid`` and ``out-of-bounds`` 400, ``not-found`` 404,
    ``conflict`` 409.
    """

    retryable = False
    default_reason = "invalid"

    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason or self.default_reason


class ScaleConflict(ScaleError):
    """Lost resourceVersion races more often than the scaler retries: try again (retryable)."""

    retryable = True
    default_reason = "conflict"


class InvalidScale(ScaleError):
    """The request (or the stored DIJob) is malformed."""


class OutOfBounds(ScaleError):
    """The job would leave its minReplicas/maxReplicas, or a task would have no replica."""

    default_reason = "out-of-bounds"


class ScaleNotFound(ScaleError):
    """No such job, task or replica (or the job's objects went away)."""

    default_reason = "not-found"


class NotStarted(ScaleError):
    """The job has no Workflow or membership yet."""

    default_reason = "conflict"


class NotDiheraWorkflow(ScaleError):
    """The job's Workflow has no dihera entry DAG."""

    default_reason = "conflict"


class RetiredReplica(ScaleError):
    """A replica retired from the Workflow was asked back (a DAG task name is never reused)."""

    default_reason = "conflict"


class QuotaRefused(ScaleError):
    """Kueue did not admit a scale-up's added replicas (the quota does not allow them): nothing changed."""

    default_reason = "conflict"
