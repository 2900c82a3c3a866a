"""Error types: every problem names the field, the value and what would be valid."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["InvalidJobError", "Problem", "format_value"]


def format_value(value: Any) -> str:
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
