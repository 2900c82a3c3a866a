"""Every benchmark of ``bench/`` at a smoke size, so CI runs each one and its log shows their figures.

``make bench`` runs them at full size (the figures in docs/); here each runs smaller on the session's
local control plane, prints what it printed into the test log (live, not captured), and must measure
what it names: it exits 0 and prints each of its figure lines with numbers in them. The figures are not
compared with their goals (speed is judged by benchmarks that print figures, not by timed assertions;
CI's machine shares its 2 cores with the background builds). What can fail: a benchmark that no longer
runs (an API it uses changed, a job it times never gets Running, a figure it no longer prints).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NUMBER = r"[\d,]+(?:\.\d+)?"


@dataclass(frozen=True)
class Bench:
    script: str
    args: tuple[str, ...]
    #: Regular expressions (``{n}``: a number) each of which a line of the output must match.
    figures: tuple[str, ...]
    cluster: bool = True
    realnode: bool = False
    timeout: float = 600

    def patterns(self) -> list[re.Pattern[str]]:
        return [re.compile(f.replace("{n}", NUMBER)) for f in self.figures]


BENCHES = (
    Bench(
        "bench_cli.py",
        ("--runs", "3"),
        (r"dihera validate\s+median {n} s", r"dihera render\s+median {n} s", r"import hera.workflows\s+median {n} s"),
        cluster=False,
    ),
    Bench("bench_render.py", ("--repeat", "1"), (r"^\s+2000\s+{n} ms\s+{n} us\s+{n} KiB",), cluster=False),
    Bench(
        "bench_server_app.py",
        ("--requests", "400", "--rounds", "1"),
        (r"GET v2 replicas, 2,001 replicas\s+{n} us",),
        cluster=False,
    ),
    Bench(
        "bench_controller.py",
        ("--jobs", "5", "--memory-jobs", "10", "--rounds", "1"),
        (
            r"^\s+1 x 10\s+{n}\s+{n}\s+{n}\s+{n} / {n}$",
            r"^\s+5 x 10\s+{n}\s+{n}\s+{n}\s+{n} / {n}$",
            r"API writes per job \(creation to status Running, \d+ jobs\): {n}",
            r"API reads per reconcile: \d+ GET \+ \d+ LIST",
            r"controller RSS idle \(started, no DIJob\): {n} MiB",
            r"controller RSS with 10 DIJobs: {n} MiB",
        ),
    ),
    Bench(
        "bench_server.py",
        ("--requests", "400", "--rounds", "1"),
        (
            r"GET replicas, auth on\s+400 requests, 4 clients: {n} req/s; p50 {n} ms, p99 {n} ms",
            r"scale-up to Running \(median of 1\): server {n} s, direct patch {n} s, ratio {n}",
        ),
    ),
    Bench(
        "bench_soak.py",
        ("--jobs", "20", "--seconds", "60", "--workers", "4", "--rss-every", "5"),
        (
            # what can fail here: an operation lost or doubled is a failed test, not only a figure
            r"soak: {n} operations in {n} s \(after {n} s of warm-up, counted\) over 20 DIJobs "
            r"\({n} live at the end\): {n} done, {n} refused, 0 timed out, {n} resent; lost 0, doubled 0",
            r"status-sync lag p50/p99 \(s\) by fifth of the run: ",
            r"controller RSS: {n} MiB at start, {n} MiB at the end",
            r"di-server RSS: {n} MiB at start, {n} MiB at the end",
            r"controller RSS by fifth \(median MiB\): {n}, {n}, {n}, {n}, {n}; second half's slope [-+]{n} MiB/h",
            r"di-server RSS by fifth \(median MiB\): {n}, {n}, {n}, {n}, {n}; second half's slope [-+]{n} MiB/h",
        ),
    ),
    Bench(
        "bench_bigjob.py",
        ("--collectors", "50", "--step", "10", "--rounds", "2"),
        (
            r"apply -> all 52 pods Running\s+{n}\s+{n}\s+{n}\s+\(median of 2 rounds; each: {n}, {n}\)",
            r"\+10 -> Running\s+{n}\s+{n}\s+{n}\s+\(median of 2 rounds; each: {n}, {n}\)",
            r"apply ratio over the machine's speed \(kwok \+ kube-scheduler CPU\): {n}"
            r"\s+\(median of 2 rounds; each: {n}, {n}\)",
        ),
    ),
    Bench(
        "bench_realnode.py",
        ("--pods", "3"),
        (r"real node: create -> Running over 3 pods: p50 {n}s", r"real node RSS with 3 pods running: {n} MiB"),
        realnode=True,
    ),
    Bench(
        "bench_sweep.py",
        ("--trials", "100", "--parallelism", "10", "--run-seconds", "10"),
        (
            # issue 40's sweep on kwok nodes at full size, podless (workflows/python/kwok_plugin_sweep.py: every
            # trial node Succeeded or it exits 1): exactly 10 of its DIJobs alive at once at most, as in the
            # plain script; the ratio is printed, not judged
            r"sweep of 100 trials, parallelism 10, 10 s each, runner plugin$",
            r"Argo Workflow \(dihera.experiment.sweep\)\s+{n} s\s+most alive: 10 DIJobs$",
            r"plain script \(same DIJobs\)\s+{n} s\s+most alive: 10 DIJobs$",
            r"ratio sweep / plain script\s+{n}",
        ),
        realnode=True,
        timeout=900,
    ),
    Bench(
        "bench_peer_wait.py",
        ("--runs", "2"),
        (r"with the wait: p50 {n}s", r"without: p50 {n}s", r"cost of 'with the wait' \(difference of the medians\)"),
        realnode=True,
    ),
)


def _param(bench: Bench) -> object:
    marks = [pytest.mark.bench, *([pytest.mark.cluster] if bench.cluster else [])]
    if bench.realnode:
        marks.append(pytest.mark.realnode)
    return pytest.param(bench, id=bench.script.removesuffix(".py"), marks=marks)


@pytest.mark.parametrize("bench", [_param(b) for b in BENCHES])
def test_the_benchmark_runs_and_prints_its_figures(
    bench: Bench, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if bench.cluster:
        env["KUBECONFIG"] = str(request.getfixturevalue("kubeconfig"))
        request.getfixturevalue("dijob_crd")
    command = [sys.executable, str(REPO / "bench" / bench.script), *bench.args]
    started = time.monotonic()
    done = subprocess.run(
        command, cwd=REPO, env=env, capture_output=True, text=True, timeout=bench.timeout, check=False
    )
    with capsys.disabled():  # the figures go to CI's log whatever the outcome
        print(f"\n[bench] {' '.join(command[1:])}: exit {done.returncode} in {time.monotonic() - started:.0f}s")
        print(done.stdout.rstrip())
        print("\n".join(line for line in done.stderr.splitlines() if line.startswith("[bench")))  # CPU per component
    assert done.returncode == 0, f"{bench.script} exited {done.returncode}:\n{done.stderr[-3000:]}"
    lines = done.stdout.splitlines()
    missing = [p.pattern for p in bench.patterns() if not any(p.search(line) for line in lines)]
    assert not missing, f"{bench.script} did not print these figures: {missing}\n{done.stdout}"
