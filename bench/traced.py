"""Run ``dihera`` under tracemalloc and write, every SECONDS, what Python memory grew since a baseline.

    python bench/traced.py OUT SECONDS -- controller --kubeconfig ... (dihera's arguments)

The baseline is the snapshot taken SECONDS after start (imports done, caches filling); each later report
appends to OUT: the traced total, the process's RSS, the 15 source lines whose live allocations grew
most since the baseline, and the stacks of the 3 that grew most since the previous report. Python's
traced memory flat while the RSS rises points below Python (the C allocator's arenas); a line that
keeps growing is a leak with its address. Used by ``bench/bench_soak.py --trace-memory`` (a diagnostic:
tracemalloc costs CPU and memory itself; under load its own snapshots take minutes).
"""

from __future__ import annotations

import sys
import threading
import time
import tracemalloc
from pathlib import Path

FRAMES = 12
TOP = 15
IGNORED = (tracemalloc.Filter(False, tracemalloc.__file__), tracemalloc.Filter(False, "<frozen importlib._bootstrap*"))


def _rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _report(out: Path, every: float) -> None:
    time.sleep(every)
    base = tracemalloc.take_snapshot().filter_traces(IGNORED)
    last, started = base, time.monotonic()
    while True:
        time.sleep(every)
        now = tracemalloc.take_snapshot().filter_traces(IGNORED)
        traced, _ = tracemalloc.get_traced_memory()
        lines = [
            f"== +{time.monotonic() - started:.0f} s: traced {traced / 2**20:.1f} MiB, RSS {_rss_mib():.1f} MiB, "
            f"traced blocks {sum(s.count for s in now.statistics('filename'))}"
        ]
        by_line = now.compare_to(base, "lineno")
        lines += [
            f"  {d.size_diff / 1024:+9.1f} KiB {d.count_diff:+7d} blocks  {d.traceback[0]}" for d in by_line[:TOP]
        ]
        for d in now.compare_to(last, "traceback")[:3]:  # what grew since the last report, with its stack
            lines.append(f"  stack of {d.size_diff / 1024:+.1f} KiB since the last report:")
            lines += [f"    {frame}" for frame in d.traceback.format()[-2 * FRAMES :]]
        last = now
        with out.open("a") as f:
            f.write("\n".join(lines) + "\n")


def main() -> int:
    out, every, sep, *args = sys.argv[1:]
    if sep != "--":
        raise SystemExit(__doc__)
    tracemalloc.start(FRAMES)
    threading.Thread(target=_report, args=(Path(out), float(every)), daemon=True, name="traced").start()
    from dihera.cli import main as dihera

    return dihera(args)


if __name__ == "__main__":
    sys.exit(main())
