"""The log lines of the contract in the package docstring, and Argo's progress file."""

from __future__ import annotations

import os
import sys


def line(event: str, **fields: object) -> str:
    """`dihera-<event> k=v k=v`: floats with 3 decimals, fields in the given order."""
    parts = [f"dihera-{event}"]
    for key, value in fields.items():
        parts.append(f"{key}={value:.3f}" if isinstance(value, float) else f"{key}={value}")
    return " ".join(parts)


def emit(event: str, **fields: object) -> None:
    """Print one contract line on stdout at once (pods' logs are read while the job runs)."""
    print(line(event, **fields), file=sys.stdout, flush=True)


def write_progress(done: int, budget: int, path: str | None = None) -> None:
    """Append `done/budget` to $ARGO_PROGRESS_FILE when it is set (Argo reads the last line)."""
    target = path if path is not None else os.environ.get("ARGO_PROGRESS_FILE")
    if not target:
        return
    with open(target, "a", encoding="utf-8") as out:
        out.write(f"{min(done, budget)}/{budget}\n")
