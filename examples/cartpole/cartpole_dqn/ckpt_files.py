"""Which checkpoint files a replica's directory holds (pure: names and paths, no torch).

A learner's checkpoint is `iteration_<n>.pth.tar` (DI-engine's own name and keys: `model`, `target_model`,
`optimizer`, `last_iter`, `last_step`), written to `<name>.tmp.<pid>` and renamed into place, so a file of
that name is whole; a `.tmp.` file is a save that was cut off.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["checkpoint_name", "iterations", "leftovers", "stale"]

_NAME = re.compile(r"^iteration_(\d+)\.pth\.tar$")


def checkpoint_name(iteration: int) -> str:
    return f"iteration_{iteration}.pth.tar"


def iterations(directory: Path) -> list[tuple[int, Path]]:
    """The checkpoints in `directory`, newest (highest iteration) first."""
    if not directory.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in directory.iterdir() if (m := _NAME.match(p.name))]
    return sorted(found, reverse=True)


def stale(directory: Path, keep: int) -> list[Path]:
    """The checkpoints beyond the newest `keep`, to delete."""
    return [p for _, p in iterations(directory)[keep:]]


def leftovers(directory: Path) -> list[Path]:
    """Temporary files of saves that were cut off (the process killed while writing)."""
    return [p for p in directory.iterdir() if ".tmp." in p.name] if directory.is_dir() else []
