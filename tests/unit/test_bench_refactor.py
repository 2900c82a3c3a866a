"""The pure parts of bench/bench_refactor.py: the A B interleaving, the figures read from each benchmark's
output, the median, spread and ratio of the table. (Running it compares two commits: not part of CI's run.)"""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_refactor", REPO / "bench" / "bench_refactor.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


br = _load()

# What bench_controller.py, bench_server.py and bench_server_app.py print (copied from real runs).
CONTROLLER_OUT = """\
controller RSS idle (started, no DIJob): 76 MiB
first DIJob after start (1 x 1, loads the rendering code): 3.10 s to all pods Running
jobs x replicas  direct(s)  controller(s)  ratio  status-sync p50/p99 (ms)
   1 x 10             1.52           1.71   1.12      410 / 433
  20 x 10            16.10          22.70   1.41      388 / 1018
API writes per job (creation to status Running, 21 jobs): 11.4  {}
controller RSS after the runs above: 101 MiB
controller RSS with 100 DIJobs: 107 MiB (100 Succeeded within the time cap)
"""
SERVER_OUT = """\
GET /healthz (baseline)  2000 requests, 4 clients: 5,012 req/s; p50 0.7 ms, p99 1.6 ms, max 3.0 ms; server CPU 151 us/request (6,623 req/s per core)
GET replicas, auth on    2000 requests, 4 clients: 4,318 req/s; p50 0.8 ms, p99 1.8 ms, max 4.1 ms; server CPU 122 us/request (8,197 req/s per core)
"""  # noqa: E501
APP_OUT = """\
di-server app, CPU per request (best of 3 rounds of 1000; in-process ASGI, auth on)
  GET /healthz (baseline)                150 us  (   6,671 req/s per core)  ratio to healthz 1.00
  GET v2 replicas, 3 replicas             49 us  (  20,320 req/s per core)  ratio to healthz 0.33
  GET v1 replicas, 3 replicas             51 us  (  19,526 req/s per core)  ratio to healthz 0.34
  GET v2 replicas, 2,001 replicas       1,048 us  (  20,800 req/s per core)  ratio to healthz 0.32
"""


def test_schedule_interleaves_before_and_after_in_every_round() -> None:
    order = br.schedule(3, ["A", "B"], ["controller", "server"])
    assert [label for _, _, label in order] == ["A", "B"] * 6
    assert [(r, key) for r, key, _ in order][:4] == [(0, "controller"), (0, "controller"), (0, "server"), (0, "server")]
    assert {r for r, _, _ in order} == {0, 1, 2}


def test_controller_figures_come_from_the_many_jobs_row_not_the_single_job_row() -> None:
    bench = br.controller_bench(20, 100, 31090)
    figures = br.parse(bench, CONTROLLER_OUT)
    assert figures == {
        "controller: ratio to Argo alone": 1.41,
        "controller: direct (Argo alone)": 16.1,
        "controller: via the controller": 22.7,
        "controller: status sync p99": 1018.0,
        "controller RSS idle": 76.0,
        "controller RSS with 100 DIJobs": 107.0,
    }
    assert "--metrics-port" in bench.args and "31090" in bench.args


def test_a_median_line_of_several_rounds_is_not_read_as_a_row() -> None:
    out = CONTROLLER_OUT + "median of 3         16.00          20.00   1.25      400 / 900\n"
    assert br.parse(br.controller_bench(20, 100, 1), out)["controller: ratio to Argo alone"] == 1.41


def test_server_figures_read_the_replicas_line_and_the_baseline_apart() -> None:
    figures = br.parse(br.server_bench(2000), SERVER_OUT)
    assert figures["di-server CPU per GET replicas (HTTP)"] == 122.0
    assert figures["di-server CPU per GET /healthz (HTTP)"] == 151.0
    assert figures["di-server GET replicas req/s"] == 4318.0
    assert figures["di-server GET replicas p99"] == 1.8


def test_app_figures_take_thousands_separators() -> None:
    figures = br.parse(br.app_bench(1000), APP_OUT)
    assert figures == {
        "di-server app CPU per GET /healthz": 150.0,
        "di-server app CPU per GET v2 replicas (3)": 49.0,
        "di-server app CPU per GET v2 replicas (2,001)": 1048.0,
    }


def test_a_figure_the_output_lacks_is_left_out() -> None:
    assert br.parse(br.server_bench(10), "nothing here\n") == {}


def test_summary_is_the_median_with_min_and_max() -> None:
    s = br.summarize([1.3, 1.0, 1.1])
    assert s.median == 1.1
    assert s.spread == (1.0, 1.3)
    assert s.text() == "1.10 (1.00-1.30)"
    assert br.summarize([]).text() == "-"


def test_ratio_is_after_over_before_of_the_medians() -> None:
    assert br.ratio(br.summarize([100, 200, 110]), br.summarize([90, 99, 1000])) == pytest.approx(0.9)
    assert math.isnan(br.ratio(br.summarize([]), br.summarize([1.0])))


@pytest.mark.parametrize(
    ("before", "after", "overlaps"),
    [([1, 2, 3], [2.5, 4, 5], True), ([1, 2, 3], [3.5, 4, 5], False), ([4, 5], [1, 2], False)],
)
def test_overlap_says_whether_the_spreads_meet(before: list[float], after: list[float], overlaps: bool) -> None:
    assert br.overlap(br.summarize(before), br.summarize(after)) is overlaps


def test_rows_give_one_line_per_figure_with_both_sides_and_the_ratio() -> None:
    results = {"A": {"x": [1.0, 2.0, 3.0]}, "B": {"x": [2.0, 4.0, 6.0], "y": [5.0]}}
    lines = br.rows(results, ("A", "B"))
    assert lines[2] == "| x | 2.00 (1.00-3.00) | 4.00 (2.00-6.00) | 2.00 | yes |"
    assert lines[3] == "| y | - | 5.00 | nan | no |"
    assert len(lines) == 4
