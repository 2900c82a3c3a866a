"""What ``dihera controller`` and ``dihera server`` share: settings from flags and the environment, then run."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping
from typing import TypeVar

__all__ = ["run_service"]

S = TypeVar("S")


def run_service(
    command: str,
    args: argparse.Namespace,
    settings_from_args: Callable[[argparse.Namespace, Mapping[str, str]], S],
    run: Callable[[S], int],
) -> int:
    """Build the settings (exit 2 with the offending flag or variable named), then ``run`` them."""
    try:
        settings = settings_from_args(args, os.environ)
    except ValueError as err:
        print(f"dihera {command}: {err}", file=sys.stderr)
        return 2
    return run(settings)
