"""CLI start-up benchmark: wall time of `dihera validate` and `dihera render` of a small job, `dihera crd`,
and `dihera wait-peers` whose names resolve (every replica's init container: its whole run when peers are up).

    python bench/bench_cli.py [--runs N] [--file FILE]

Prints the median, min and max of N runs of each command as a fresh process (what a person or a
CI step pays), and the heaviest imports of one run (`python -X importtime`). Asserts nothing.
Goals (issue 12): validate <= 0.5 s, render <= 1.0 s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS: dict[str, list[str]] = {"validate": ["validate", "-q"], "render": ["render"], "crd": ["crd"],
                                  "wait-peers": ["wait-peers", "--rank", "0", "--nodes", "localhost"]}
#: Commands that read the job file.
WITH_FILE = ("validate", "render")


def wall(args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "dihera", *args], check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
    return time.perf_counter() - start


def heaviest_imports(args: list[str], top: int) -> list[tuple[float, str]]:
    """Top-level imports of one run by cumulative time (seconds), heaviest first."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "dihera", *args], check=True,
                          capture_output=True, text=True, cwd=ROOT)
    rows = []
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        _, cumulative, name = line.split("|")
        if cumulative.strip().isdigit() and not name.startswith("   "):  # depth 1: what dihera itself pulls in
            rows.append((int(cumulative) / 1e6, name.strip()))
    return sorted(rows, reverse=True)[:top]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--file", default="workflows/serial.yaml", help="the job (default: one replica)")
    args = parser.parse_args()
    print(f"dihera CLI wall time, median of {args.runs} runs ({args.file}; load {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} cores)")
    for name, argv in COMMANDS.items():
        full = argv + ([args.file] if name in WITH_FILE else [])
        wall(full)  # warm the bytecode cache
        times = [wall(full) for _ in range(args.runs)]
        print(f"  dihera {name:<9} median {statistics.median(times):.3f} s  "
              f"min {min(times):.3f}  max {max(times):.3f}")
        for seconds, module in heaviest_imports(full, 3):
            print(f"      import {module:<28} {seconds:.3f} s")


if __name__ == "__main__":
    main()
