"""CLI start-up benchmark: wall time of `dihera validate` and `dihera render` of a small job, `dihera crd`,
`dihera convert` of an older DIJob, and `dihera wait-peers` whose names resolve (every replica's init
container: its whole run when peers are up); and `dihera validate` of one file of many small DIJobs.

    python bench/bench_cli.py [--runs N] [--file FILE] [--many 4000,20000]

Prints the median, min and max wall time of N runs of each command as a fresh process (what a person
or a CI step pays) and its median CPU time (user + system: steadier when other work shares the
cores), the heaviest imports of one run (`python -X importtime`), and two baselines measured in
the same run: the interpreter alone (`python -c pass`) and importing Hera's models (`import
hera.workflows`), the floor of any rendering with Hera. Ratios: against the goal where there is one
(issue 12: validate <= 0.5 s, render <= 1.0 s), and render against the Hera floor. ``--many``: one run of
`dihera validate` per count of a file of that many two-task DIJobs, with the time per document and each
count's per-document time against the first's (1.00: linear; issue 57 measured 20,000 at 5x 4,000's per
document before a quadratic step was removed). Asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS: dict[str, list[str]] = {
    "validate": ["validate", "-q"],
    "render": ["render"],
    "crd": ["crd"],
    "convert": ["convert", "-q", "tests/unit/fixtures/convert/v1alpha2-shape.yaml"],
    "wait-peers": ["wait-peers", "--rank", "0", "--nodes", "localhost"],
}
#: Commands that read the job file.
WITH_FILE = ("validate", "render")
#: Issue 12's goals, seconds of wall time.
GOALS = {"validate": 0.5, "render": 1.0}
#: What any process pays before dihera's own work, measured in the same run.
BASELINES = {"python -c pass": ["-c", "pass"], "import hera.workflows": ["-c", "import hera.workflows"]}


#: The commands run with Python's bytecode cache written and read, as after ``pip install`` (which compiles
#: it): with PYTHONDONTWRITEBYTECODE set (this machine's shell, some CI images) every run of a checkout's
#: editable install would compile dihera's ~30 modules from source again (~40 ms).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def wall(args: list[str], python_args: list[str] | None = None) -> tuple[float, float]:
    """Wall time and CPU time (user + system) of one run as a fresh process."""
    argv = [sys.executable, *(python_args or ["-m", "dihera", *args])]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT, env=ENV, check=False)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr.decode(errors='replace')}")
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def timed(runs: int, args: list[str], python_args: list[str] | None = None) -> tuple[list[float], float]:
    """Wall times of ``runs`` runs and their median CPU time (steadier than wall time on a busy machine)."""
    wall(args, python_args)  # warm the bytecode cache
    runs_ = [wall(args, python_args) for _ in range(runs)]
    return [w for w, _ in runs_], statistics.median(c for _, c in runs_)


def heaviest_imports(args: list[str], top: int) -> list[tuple[float, str]]:
    """Top-level imports of one run by cumulative time (seconds), heaviest first."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "dihera", *args],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=ENV,
    )
    rows = []
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        _, cumulative, name = line.split("|")
        if cumulative.strip().isdigit() and not name.startswith("   "):  # depth 1: what dihera itself pulls in
            rows.append((int(cumulative) / 1e6, name.strip()))
    return sorted(rows, reverse=True)[:top]


def many_jobs(count: int) -> str:
    """A YAML stream of ``count`` small DIJobs (a learner and two collectors each), as one file holds them."""
    from dihera.manifests import dump_yaml_stream

    def one(i: int) -> dict[str, object]:
        pod = {"spec": {"containers": [{"name": "c", "image": "ding:1", "command": ["ding", "-m", "serial"]}]}}
        tasks = [{"type": "learner", "template": pod}, {"type": "collector", "replicas": 2, "template": pod}]
        return {"apiVersion": "diengine.opendilab.org/v2alpha1", "kind": "DIJob", "metadata": {"name": f"job-{i}"},
                "spec": {"tasks": tasks}}  # fmt: skip

    return dump_yaml_stream(one(i) for i in range(count))


def validate_many(counts: list[int]) -> None:
    """One `dihera validate` of a file of each count of DIJobs: seconds, per document, against the first count."""
    first = None
    with tempfile.TemporaryDirectory() as tmp:
        for count in counts:
            path = Path(tmp) / f"{count}.yaml"
            path.write_text(many_jobs(count))
            seconds, cpu = wall(["validate", "-q", str(path)])
            per = seconds / count
            first = first or per
            print(
                f"  dihera validate {count:>6} DIJobs  {seconds:.1f} s  cpu {cpu:.1f} s  {per * 1000:.2f} ms each  "
                f"per document vs {counts[0]}: ratio {per / first:.2f}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--file", default="workflows/serial.yaml", help="the job (default: one replica)")
    parser.add_argument("--many", default="4000,20000", help="counts of DIJobs in one file to validate ('': none)")
    args = parser.parse_args()
    print(
        f"dihera CLI wall time, median of {args.runs} runs ({args.file}; load {os.getloadavg()[0]:.1f} "
        f"on {os.cpu_count()} cores)"
    )
    floors = {}
    for name, python_args in BASELINES.items():
        times, cpu = timed(args.runs, [], python_args)
        floors[name] = statistics.median(times)
        print(
            f"  baseline {name:<22} median {floors[name]:.3f} s  min {min(times):.3f}  max {max(times):.3f}  "
            f"cpu {cpu:.3f} s"
        )
    for name, argv in COMMANDS.items():
        full = argv + ([args.file] if name in WITH_FILE else [])
        times, cpu = timed(args.runs, full)
        median = statistics.median(times)
        ratios = [f"goal {GOALS[name]:.1f} s: ratio {median / GOALS[name]:.2f}"] if name in GOALS else []
        if name == "render":
            ratios.append(f"vs import hera.workflows: ratio {median / floors['import hera.workflows']:.2f}")
        print(
            f"  dihera {name:<10} median {median:.3f} s  min {min(times):.3f}  max {max(times):.3f}  "
            f"cpu {cpu:.3f} s  " + "  ".join(ratios)
        )
        for seconds, module in heaviest_imports(full, 3):
            print(f"      import {module:<28} {seconds:.3f} s")
    if args.many:
        validate_many([int(n) for n in args.many.split(",")])


if __name__ == "__main__":
    main()
