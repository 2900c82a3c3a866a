"""The same benchmarks on two commits in one run, interleaved, so their ratio is the code's and not the machine's.

    python bench/bench_refactor.py --before d0c7a87 [--after HEAD] [--rounds 3] [--only controller,server,app]

Why: a before/after figure measured an hour apart on this 2-core machine, shared with CI, moves more with the
machine's load than with the code. Here each round runs every benchmark on the "before" commit, then on the
"after" one (A B A B ...), and each figure is the median over the rounds with its spread (min-max), so a
drift in the load lands on both sides alike. The load average is printed before every run.

How: a throwaway git worktree of each commit under ``~/.cache/dihera/bench-worktrees`` (removed at the
end), this checkout's ``bench/`` copied into it (``--scripts tree`` keeps the tree's own: by default both
sides run the same measuring code, with what this checkout fixed in it), and each benchmark's own entry point
run from that tree with this venv's python and ``PYTHONPATH=<tree>``: the script and the ``dihera
controller`` / ``dihera server`` it starts import that tree's ``dihera`` (checked before the first run).
Figures are read from what the scripts print (each run's whole output is kept in
.devcluster/logs/bench-refactor/); the peak RSS (VmHWM) of the ``dihera controller`` and ``dihera server``
processes is read from ``/proc`` by this script while they run, the same way for both trees.

- ``controller``: ``bench_controller.py --rounds 1 --skip single,steady`` (2-3.5 min a run): its ratio to
  Argo alone (controller / direct, the N-jobs row), status-sync p99, RSS idle and with M DIJobs; needs
  $KUBECONFIG or .devcluster/kubeconfig;
- ``server``: ``bench_server.py --rounds 0``: the di-server's CPU per ``GET replicas`` over HTTP and its
  req/s; the same cluster;
- ``app``: ``bench_server_app.py``: the di-server app's CPU per request in one process (no cluster).

Not in CI's test run (it compares commits); tests/unit/test_bench_refactor.py tests the pure parts below.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TREES = Path(os.environ.get("DIHERA_CACHE") or Path.home() / ".cache" / "dihera") / "bench-worktrees"
LOGS = REPO / ".devcluster" / "logs" / "bench-refactor"  # each run's output: <round>-<benchmark>-<commit>.log
NUMBER = r"([\d,]+(?:\.\d+)?)"

__all__ = [
    "BENCHES",
    "Bench",
    "Figure",
    "Summary",
    "parse",
    "rows",
    "schedule",
    "summarize",
]


@dataclass(frozen=True)
class Figure:
    """One number a benchmark prints: ``pattern``'s first group (``{n}``: a number) on the ``last``/first line."""

    name: str
    pattern: str
    unit: str
    last: bool = True  # the last matching line (the largest size is printed last)

    def find(self, text: str) -> float | None:
        regex = re.compile(self.pattern.replace("{n}", NUMBER), re.MULTILINE)
        matches = list(regex.finditer(text))
        if not matches:
            return None
        return float((matches[-1] if self.last else matches[0]).group(1).replace(",", ""))


@dataclass(frozen=True)
class Bench:
    """A benchmark script, its arguments, the figures read from its output and the processes whose RSS to watch."""

    key: str
    script: str
    args: tuple[str, ...]
    figures: tuple[Figure, ...]
    cluster: bool = True
    #: ``dihera <subcommand>`` processes whose peak RSS this script reads from /proc while the benchmark runs
    watch: tuple[str, ...] = ()


_ROW = r"^\s+(?!1 x)\d+ x \d+\s+"  # bench_controller's N-jobs row: direct(s) controller(s) ratio p50 / p99 (ms)
_X = r"[\d.]+\s+"


def controller_bench(jobs: int, memory_jobs: int, metrics_port: int) -> Bench:
    return Bench(
        "controller",
        "bench_controller.py",
        (
            *("--jobs", str(jobs), "--memory-jobs", str(memory_jobs), "--rounds", "1"),
            *("--metrics-port", str(metrics_port), "--skip", "single,steady"),
        ),
        (
            Figure("controller: ratio to Argo alone", _ROW + _X + _X + r"{n}\s", ""),
            Figure("controller: direct (Argo alone)", _ROW + r"{n}\s", "s"),
            Figure("controller: via the controller", _ROW + _X + r"{n}\s", "s"),
            Figure("controller: status sync p99", _ROW + _X + _X + _X + r"\d+ / {n}$", "ms"),
            Figure("controller RSS idle", r"controller RSS idle \(started, no DIJob\): {n} MiB", "MiB"),
            Figure(f"controller RSS with {memory_jobs} DIJobs", r"controller RSS with \d+ DIJobs: {n} MiB", "MiB"),
        ),
        watch=("controller",),
    )


def server_bench(requests: int) -> Bench:
    line = r"GET replicas, auth on\s+\d+ requests, \d+ clients: "
    return Bench(
        "server",
        "bench_server.py",
        ("--requests", str(requests), "--rounds", "0", "--gets", "1"),
        (
            Figure("di-server CPU per GET replicas (HTTP)", line + r".*server CPU {n} us/request", "us"),
            Figure("di-server CPU per GET /healthz (HTTP)", r"GET /healthz \(baseline\).*CPU {n} us/request", "us"),
            Figure("di-server GET replicas req/s", line + r"{n} req/s", "req/s"),
            Figure("di-server GET replicas p99", line + r".*p99 {n} ms", "ms"),
        ),
        watch=("server",),
    )


def app_bench(requests: int) -> Bench:
    return Bench(
        "app",
        "bench_server_app.py",
        ("--requests", str(requests), "--rounds", "3"),
        (
            Figure("di-server app CPU per GET /healthz", r"GET /healthz \(baseline\)\s+{n} us", "us"),
            Figure("di-server app CPU per GET v2 replicas (3)", r"GET v2 replicas, 3 replicas\s+{n} us", "us"),
            Figure("di-server app CPU per GET v2 replicas (2,001)", r"GET v2 replicas, 2,001 replicas\s+{n} us", "us"),
        ),
        cluster=False,
    )


def benches(args: argparse.Namespace) -> tuple[Bench, ...]:
    return (
        controller_bench(args.jobs, args.memory_jobs, args.metrics_port),
        server_bench(args.requests),
        app_bench(args.app_requests),
    )


BENCHES = ("controller", "server", "app")


def schedule(rounds: int, labels: Sequence[str], keys: Sequence[str]) -> list[tuple[int, str, str]]:
    """``(round, benchmark, label)`` in run order: each round runs every benchmark on each label in turn (A B A B)."""
    return [(r, key, label) for r in range(rounds) for key in keys for label in labels]


@dataclass(frozen=True)
class Summary:
    """Median and spread of one figure's values over the rounds."""

    values: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.values) if self.values else float("nan")

    @property
    def spread(self) -> tuple[float, float]:
        return (min(self.values), max(self.values)) if self.values else (float("nan"), float("nan"))

    def text(self) -> str:
        if not self.values:
            return "-"
        lo, hi = self.spread
        return f"{_num(self.median)} ({_num(lo)}-{_num(hi)})" if len(self.values) > 1 else _num(self.median)


def summarize(values: Sequence[float]) -> Summary:
    return Summary(tuple(values))


def _num(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.2f}" if abs(x) < 10 else f"{x:.1f}"


def ratio(before: Summary, after: Summary) -> float:
    """after / before, of the medians (nan when a side has no value)."""
    if not before.values or not after.values or before.median == 0:
        return float("nan")
    return after.median / before.median


def overlap(before: Summary, after: Summary) -> bool:
    """Whether the two spreads overlap: a difference of medians within the run-to-run noise."""
    if not before.values or not after.values:
        return False
    (b_lo, b_hi), (a_lo, a_hi) = before.spread, after.spread
    return a_lo <= b_hi and b_lo <= a_hi


def parse(bench: Bench, text: str) -> dict[str, float]:
    """Every figure of ``bench`` found in its output (a figure not printed is left out)."""
    found = {f.name: f.find(text) for f in bench.figures}
    return {k: v for k, v in found.items() if v is not None}


def rows(results: dict[str, dict[str, list[float]]], labels: tuple[str, str]) -> list[str]:
    """The markdown table's lines: figure | before | after | ratio, the spreads in parentheses."""
    out = [
        f"| figure | {labels[0]} median (min-max) | {labels[1]} median (min-max) | ratio | spreads overlap |",
        "|---|---|---|---|---|",
    ]
    names = list(dict.fromkeys(n for side in results.values() for n in side))
    for name in names:
        b, a = summarize(results[labels[0]].get(name, [])), summarize(results[labels[1]].get(name, []))
        r = ratio(b, a)
        out.append(f"| {name} | {b.text()} | {a.text()} | {r:.2f} | {'yes' if overlap(b, a) else 'no'} |")
    return out


# --- what runs things (not unit-tested: git, processes, /proc) ---


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(REPO), *args], check=True, capture_output=True, text=True).stdout.strip()


def make_tree(rev: str, scripts: str) -> Path:
    """A detached worktree of ``rev`` outside the checkout; this checkout's bench/ copied in unless ``scripts=tree``."""
    sha = git("rev-parse", "--verify", f"{rev}^{{commit}}")
    path = TREES / f"{sha[:12]}-{os.getpid()}"
    path.parent.mkdir(parents=True, exist_ok=True)
    git("worktree", "add", "--detach", str(path), sha)
    if scripts == "here":
        ignore = shutil.ignore_patterns("__pycache__")
        shutil.copytree(REPO / "bench", path / "bench", dirs_exist_ok=True, ignore=ignore)
    return path


def check_imports(tree: Path, env: dict[str, str]) -> None:
    """Fail unless ``dihera`` imports from ``tree`` under ``env`` (this venv's editable install must not win)."""
    argv = [sys.executable, "-c", "import dihera; print(dihera.__file__)"]
    where = subprocess.run(argv, cwd=tree, env=env, check=True, capture_output=True, text=True).stdout.strip()
    if not Path(where).resolve().is_relative_to(tree.resolve()):
        raise RuntimeError(f"dihera imports from {where}, not from the worktree {tree}: PYTHONPATH did not take")


def remove_tree(path: Path) -> None:
    git("worktree", "remove", "--force", str(path))


def _children(pid: int) -> dict[int, int]:
    """pid -> parent pid of every process (read once)."""
    out: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                out[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    return out


def _descendants(root: int) -> Iterator[int]:
    parents = _children(root)
    seen, todo = set(), [root]
    while todo:
        pid = todo.pop()
        for child, parent in parents.items():
            if parent == pid and child not in seen:
                seen.add(child)
                todo.append(child)
                yield child


def _role(pid: int, roles: tuple[str, ...]) -> str | None:
    """``controller`` / ``server`` for a ``dihera controller|server`` process (run as ``python .../dihera ...``)."""
    try:
        argv = [a for a in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0") if a]
    except OSError:
        return None
    if argv and Path(argv[0]).name.startswith("python"):
        argv = argv[1:]
    if len(argv) >= 2 and Path(argv[0]).name == "dihera" and argv[1] in roles:
        return argv[1]
    return None


def _hwm_mib(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


@dataclass
class Run:
    output: str
    seconds: float
    peaks: dict[str, float] = field(default_factory=dict)


def run(bench: Bench, tree: Path, env: dict[str, str], log: Path) -> Run:
    """Run ``bench`` from ``tree``; its stdout, its wall time, and the peak RSS of the processes it watches."""
    argv = [sys.executable, str(tree / "bench" / bench.script), *bench.args]
    started = time.monotonic()
    proc = subprocess.Popen(argv, cwd=tree, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peaks: dict[str, float] = {}
    out: list[str] = []
    err: list[str] = []
    readers = [
        threading.Thread(target=lambda s=s, b=b: b.extend(s), daemon=True)
        for s, b in ((proc.stdout, out), (proc.stderr, err))
    ]
    for t in readers:
        t.start()
    while proc.poll() is None:
        if bench.watch:
            for pid in _descendants(proc.pid):
                role = _role(pid, bench.watch)
                hwm = _hwm_mib(pid) if role else None
                if role and hwm is not None:
                    peaks[role] = max(peaks.get(role, 0.0), hwm)
        time.sleep(0.5)
    for t in readers:
        t.join()
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(f"$ {' '.join(argv)}\n{''.join(out)}\n--- stderr ---\n{''.join(err)}")
    if proc.returncode != 0:
        tail = "".join(err)[-3000:]
        raise RuntimeError(f"{bench.script} in {tree} exited {proc.returncode}; stderr's end:\n{tail}")
    return Run("".join(out), time.monotonic() - started, peaks)


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", required=True, help="the commit before (any git revision)")
    parser.add_argument("--after", default="HEAD", help="the commit after (default HEAD)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of A B per benchmark (>= 3 for a spread)")
    parser.add_argument("--only", default=",".join(BENCHES), help=f"comma-separated subset of {', '.join(BENCHES)}")
    parser.add_argument(
        "--scripts",
        choices=("here", "tree"),
        default="here",
        help="bench/ scripts from this checkout (the same for both) or each commit's own",
    )
    parser.add_argument("--jobs", type=int, default=20, help="bench_controller --jobs (of 10 replicas)")
    parser.add_argument("--memory-jobs", type=int, default=60, help="bench_controller --memory-jobs")
    parser.add_argument("--metrics-port", type=int, default=31090, help="the benchmark controller's metrics port")
    parser.add_argument("--requests", type=int, default=2000, help="bench_server --requests")
    parser.add_argument("--app-requests", type=int, default=1000, help="bench_server_app --requests")
    parser.add_argument("--keep", action="store_true", help="keep the worktrees and print where")
    args = parser.parse_args()
    args.keys = [k for k in args.only.split(",") if k]
    unknown = sorted(set(args.keys) - set(BENCHES))
    if unknown:
        parser.error(f"--only: unknown benchmark(s) {unknown}; valid: {', '.join(BENCHES)}")
    # absolute: each benchmark runs with its worktree as the working directory
    args.kubeconfig = str(Path(os.environ.get("KUBECONFIG") or REPO / ".devcluster" / "kubeconfig").resolve())
    if set(args.keys) & {"controller", "server"} and not Path(args.kubeconfig).is_file():
        parser.error(f"no cluster: {args.kubeconfig} does not exist ($KUBECONFIG, or `python -m ci.devcluster up`)")
    return args


def measure(
    args: argparse.Namespace, trees: dict[str, Path], shas: dict[str, str], loads: list[float]
) -> dict[str, dict[str, list[float]]]:
    """Run the schedule; figure name -> its values, by label. Prints a line per run."""
    chosen = {b.key: b for b in benches(args) if b.key in args.keys}
    env = {**os.environ, "KUBECONFIG": args.kubeconfig}
    env.setdefault("DIHERA_DEVCLUSTER_DIR", str(REPO / ".devcluster"))  # bench/cpu.py finds this cluster's processes
    results: dict[str, dict[str, list[float]]] = {label: {} for label in trees}
    for tree in trees.values():
        check_imports(tree, {**env, "PYTHONPATH": str(tree)})
    for rnd, key, label in schedule(args.rounds, list(trees), list(chosen)):
        bench, load = chosen[key], os.getloadavg()[0]
        loads.append(load)
        log = LOGS / f"{rnd + 1}-{key}-{shas[label]}.log"
        done = run(bench, trees[label], {**env, "PYTHONPATH": str(trees[label])}, log)
        figures = parse(bench, done.output)
        figures.update({f"{role} peak RSS (VmHWM, {key} benchmark)": v for role, v in done.peaks.items()})
        for name, value in figures.items():
            results[label].setdefault(name, []).append(value)
        missing = [f.name for f in bench.figures if f.name not in figures]
        shown = ", ".join(f"{k} {_num(v)}" for k, v in figures.items())
        print(
            f"round {rnd + 1} {key:<10} {label:<8} ({shas[label]}) load {load:.1f}: {done.seconds:.0f} s; "
            f"{shown}{'; NOT FOUND: ' + ', '.join(missing) if missing else ''}",
            flush=True,
        )
    return results


def main() -> int:
    args = arguments()
    labels = (args.before, args.after)
    shas = {label: git("rev-parse", "--short", f"{label}^{{commit}}") for label in labels}
    print(
        f"before {args.before} = {shas[args.before]}, after {args.after} = {shas[args.after]}; {args.rounds} rounds "
        f"of {', '.join(args.keys)} (A B A B); bench/ from {args.scripts}; {os.cpu_count()} cores",
        flush=True,
    )
    started, loads = time.monotonic(), []
    trees: dict[str, Path] = {}
    try:
        for label in labels:
            trees[label] = make_tree(label, args.scripts)
        results = measure(args, trees, shas, loads)
    finally:
        for path in trees.values():
            if args.keep:
                print(f"kept {path}")
            else:
                remove_tree(path)
    print(
        f"\n{args.rounds} rounds, A B interleaved, {(time.monotonic() - started) / 60:.1f} min; load average (1 min) "
        f"at the runs' starts {min(loads):.1f}-{max(loads):.1f} (median {statistics.median(loads):.1f}) on "
        f"{os.cpu_count()} cores; before {shas[args.before]}, after {shas[args.after]}"
    )
    print("\n".join(rows(results, labels)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
