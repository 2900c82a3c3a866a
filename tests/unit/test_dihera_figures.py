"""The one-line DI-engine middleware (examples/figures/dihera_figures.py): its figures from a context, its
sender that never blocks training, and, with DI-engine (``DIHERA_DING_PYTHON``), DI-engine's stock DQN main
plus that one line reporting every role's figures to a local server."""

from __future__ import annotations

import http.server
import json
import math
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "figures"))

from dihera_figures import DataWait, Figures, Sender, figures_middleware, training_url

FIGURES = Path(__file__).resolve().parents[2] / "examples" / "figures"
DING_PYTHON = os.environ.get("DIHERA_DING_PYTHON")


class Clock:
    def __init__(self) -> None:
        self.now = 10.0

    def __call__(self) -> float:
        return self.now


def test_the_url_is_the_jobs_training_route() -> None:
    assert training_url("https://srv:8443/", "team-a/dqn.v2") == "https://srv:8443/v2alpha1/job/team-a.dqn.v2/training"


def test_learner_figures_over_the_window() -> None:
    clock, wait = Clock(), DataWait()
    figures = Figures(clock, wait)
    ctx = SimpleNamespace(train_iter=0, train_data=None, train_output=None)
    assert figures.learner(ctx) == {"role": "learner", "iteration": 0}
    ctx.train_iter, ctx.train_data, ctx.train_output = 20, [0] * 64, [{"total_loss": 0.5}, {"total_loss": math.nan}]
    figures.count_samples(ctx)
    wait.seconds += 0.5
    clock.now += 2.0
    report = figures.learner(ctx)
    assert report["iterationsPerSecond"] == 10.0 and report["samplesPerSecond"] == 640.0
    assert report["dataWaitFraction"] == 0.25 and math.isnan(report["loss"])


def test_collector_and_evaluator_figures() -> None:
    clock = Clock()
    figures = Figures(clock)
    ctx = SimpleNamespace(env_step=100, train_iter=7, last_eval_iter=-1, eval_value=-math.inf)
    assert figures.collector(ctx) == {"role": "collector", "envSteps": 100, "modelIteration": 7}
    ctx.env_step, clock.now = 400, clock.now + 3
    assert figures.collector(ctx)["envStepsPerSecond"] == 100.0
    assert figures.evaluator(ctx) is None  # not evaluated yet
    ctx.last_eval_iter, ctx.eval_value = 7, 21.5
    assert figures.evaluator(ctx) == {"role": "evaluator", "iteration": 7, "return": 21.5}
    assert figures.evaluator(ctx) is None  # the same evaluation, once


def test_the_data_wait_times_the_wrapped_call() -> None:
    clock = Clock()
    wait = DataWait(clock)

    def merge(x: int) -> int:
        clock.now += 1.5
        return x + 1

    assert wait.wrap(merge)(1) == 2 and wait.seconds == 1.5


def test_a_middleware_reports_each_role_every_interval_and_each_evaluation_once() -> None:
    sent: list[dict[str, Any]] = []
    clock = Clock()
    sender = Sender(lambda body: sent.append(dict(body)))
    middleware = figures_middleware(("learner", "collector", "evaluator"), sender, clock, interval=2.0)
    ctx = SimpleNamespace(train_iter=0, env_step=0, train_data=None, train_output=None, last_eval_iter=0,
                          eval_value=9.0)  # fmt: skip
    for _ in range(10):  # 10 steps in 1 s: one report per role
        middleware(ctx)
        ctx.train_iter, ctx.env_step, clock.now = ctx.train_iter + 1, ctx.env_step + 8, clock.now + 0.1
        sender.flush()
    assert sorted(r["role"] for r in sent) == ["collector", "evaluator", "learner"]
    clock.now += 2
    middleware(ctx)
    sender.flush()
    assert [r["role"] for r in sent[3:]] == ["learner", "collector"]


def test_a_failing_or_slow_server_never_blocks_or_breaks_training(capsys: pytest.CaptureFixture[str]) -> None:
    release = threading.Event()

    def stuck(body: Any) -> None:
        release.wait(5)
        raise OSError("connection refused")

    sender = Sender(stuck)
    middleware = figures_middleware(("learner", "collector"), sender, interval=0.0)
    ctx = SimpleNamespace(train_iter=1, env_step=1, train_data=[1], train_output=None)
    start = time.monotonic()
    for _ in range(1000):
        middleware(ctx)
    assert time.monotonic() - start < 1.0
    middleware(SimpleNamespace())  # a context without the figures: ignored
    release.set()
    sender.flush()
    assert capsys.readouterr().out.count("dihera-figures-failed error=OSError detail=connection_refused") == 1


class _Reports(http.server.BaseHTTPRequestHandler):
    received: list[dict[str, Any]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        _Reports.received.append({"path": self.path, **json.loads(body)})
        self.send_response(202)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


_STOCK_DQN_PLUS_ONE_LINE = """
import inspect, sys
import ding.example.dqn as stock
source = inspect.getsource(stock)
run = "        task.run()"
assert source.count(run) == 1, "DI-engine's stock DQN main changed"
# the one line, and a bounded run for the test (the stock main trains until CartPole's stop value)
one_line = "        task.use(dihera_figures(interval=0.5))\\n"
source = source.replace(run, one_line + "        task.run(max_step=%d)" % int(sys.argv[1]))
namespace = {"__name__": "stock_dqn"}
exec(compile("from dihera_figures import dihera_figures\\n" + source, "stock_dqn.py", "exec"), namespace)
namespace["main"]()
"""


@pytest.mark.skipif(not DING_PYTHON, reason="no DI-engine: set DIHERA_DING_PYTHON")
def test_the_stock_dqn_main_plus_one_line_reports_every_roles_figures(tmp_path: Path) -> None:
    assert DING_PYTHON is not None
    _Reports.received = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Reports)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = {**os.environ, "PYTHONPATH": str(FIGURES), "OMP_NUM_THREADS": "1",
           "DI_SERVER_URL": f"http://127.0.0.1:{server.server_port}", "DI_JOB_ID": "ns/stock"}  # fmt: skip
    done = subprocess.run([DING_PYTHON, "-c", _STOCK_DQN_PLUS_ONE_LINE, "400"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600, check=False)  # fmt: skip
    server.shutdown()
    assert done.returncode == 0, done.stderr[-3000:]
    by_role = {r["role"]: r for r in _Reports.received}
    assert {r["path"] for r in _Reports.received} == {"/v2alpha1/job/ns.stock/training"}
    assert by_role["learner"]["iteration"] > 0 and by_role["learner"]["iterationsPerSecond"] > 0
    assert by_role["collector"]["envSteps"] > 0 and by_role["collector"]["envStepsPerSecond"] > 0
    assert isinstance(by_role["evaluator"]["return"], float)


@pytest.mark.skipif(not DING_PYTHON, reason="no DI-engine: set DIHERA_DING_PYTHON")
def test_without_the_env_the_stock_program_runs_as_before(tmp_path: Path) -> None:
    assert DING_PYTHON is not None
    env = {k: v for k, v in os.environ.items() if not k.startswith("DI_")}
    env.update(PYTHONPATH=str(FIGURES), OMP_NUM_THREADS="1")
    done = subprocess.run([DING_PYTHON, "-c", _STOCK_DQN_PLUS_ONE_LINE, "50"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
