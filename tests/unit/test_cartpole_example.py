"""The CartPole example's pure parts (no DI-engine needed): role choice, settings, the send gate's
decisions, the log lines, the progress file.

The unused big weight (cartpole_dqn/bigmodel.py) needs torch: give an interpreter that has it in
``DIHERA_TORCH_PYTHON``; the DI-engine attributes the beacon and the kick rely on need DI-engine 0.5.3:
``DIHERA_DING_PYTHON`` (the DI-engine image's ``/opt/ding/bin/python``, or a venv built from
ci/images/di-engine/requirements.txt). Without them those tests are skipped.
"""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "cartpole"))

from cartpole_dqn.gate import Sighting, Verdict, incarnation_id, is_new_learner, verdict
from cartpole_dqn.metrics import CheckpointReporter, MetricsReporter, http_sender, profilings_url
from cartpole_dqn.report import line, write_progress
from cartpole_dqn.roles import pick_role, world_size
from cartpole_dqn.settings import Settings

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cartpole"
TORCH_PYTHON = os.environ.get("DIHERA_TORCH_PYTHON", sys.executable)
DING_PYTHON = os.environ.get("DIHERA_DING_PYTHON")


@pytest.mark.parametrize(
    ("labels", "node_id", "role"),
    [
        ({"learner"}, 3, "learner"),
        ({"collector", "gpu"}, 0, "collector"),
        ({"evaluator"}, 0, "evaluator"),
        (set(), 0, "learner"),
        (set(), 1, "evaluator"),
        ({"other"}, 2, "collector"),
        ((), 7, "collector"),
    ],
)
def test_role_comes_from_labels_then_node_id(labels: set[str], node_id: int, role: str) -> None:
    assert pick_role(labels, node_id) == role


def test_two_role_labels_are_refused_with_the_choices() -> None:
    with pytest.raises(ValueError, match=r"\['collector', 'learner'\].*exactly one of"):
        pick_role({"learner", "collector"}, 0)


def test_world_size_counts_vacant_entries() -> None:
    assert world_size("a,b,c,d") == 4
    assert world_size("a,,c") == 3
    assert world_size("") == 1


def test_contract_lines_keep_field_order_and_round_floats() -> None:
    assert line("eval", **{"return": 195.0, "iter": 40}) == "dihera-eval return=195.000 iter=40"
    assert line("progress", role="learner", iter=20, env_step=96) == "dihera-progress role=learner iter=20 env_step=96"


def test_progress_file_gets_capped_fractions(tmp_path: Path) -> None:
    target = tmp_path / "progress"
    write_progress(20, 2000, str(target))
    write_progress(2500, 2000, str(target))
    assert target.read_text().splitlines() == ["20/2000", "2000/2000"]


def test_progress_file_is_optional(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ARGO_PROGRESS_FILE", raising=False)
    write_progress(1, 10)
    monkeypatch.setenv("ARGO_PROGRESS_FILE", str(tmp_path / "p"))
    write_progress(1, 10)
    assert (tmp_path / "p").read_text() == "1/10\n"


def test_settings_defaults_take_the_rank_from_the_node_id() -> None:
    assert Settings.from_environ({}, node_id=3) == Settings(rank=3, world=1)
    assert Settings.from_environ({"DI_RANK": "2", "DI_NODES": "a,b,c,d"}, node_id=0) == Settings(rank=2, world=4)


def test_settings_read_the_gate_and_the_extra_weight() -> None:
    environ = {
        "DIHERA_LEARNER_FRESH": "2.5",
        "DIHERA_LEARNER_WAIT": "0",
        "DIHERA_EXTRA_PARAMS": "1690000",
        "DIHERA_TRAIN_ITER_BUDGET": "500",
    }
    settings = Settings.from_environ(environ, node_id=0)
    assert (settings.learner_fresh, settings.learner_wait) == (2.5, 0.0)
    assert (settings.extra_params, settings.train_iter_budget) == (1690000, 500)


def test_settings_read_a_sweeps_trial() -> None:
    environ = {"DIHERA_PARAM_LR": "0.0005", "DIHERA_SEED": "3", "DIHERA_TRIAL": "7",
               "DI_SERVER_URL": "http://srv:8081", "DI_JOB_ID": "ns/job-t07"}  # fmt: skip
    settings = Settings.from_environ(environ, node_id=1)
    assert (settings.learning_rate, settings.seed, settings.trial) == (0.0005, 3, 7)
    assert (settings.server_url, settings.job_id) == ("http://srv:8081", "ns/job-t07")
    with pytest.raises(ValueError, match="DIHERA_PARAM_LR='-1': want a number > 0; DIHERA_SEED='x': want an integer"):
        Settings.from_environ({"DIHERA_PARAM_LR": "-1", "DIHERA_SEED": "x"}, node_id=0)


def test_settings_read_the_delays_that_slow_one_side() -> None:
    settings = Settings.from_environ({"DIHERA_COLLECT_DELAY": "0.5", "DIHERA_TRAIN_DELAY": "0.25"}, node_id=2)
    assert (settings.collect_delay, settings.train_delay) == (0.5, 0.25)
    assert Settings.from_environ({}, node_id=2).collect_delay == 0.0
    with pytest.raises(ValueError, match="DIHERA_TRAIN_DELAY='-1': want a number >= 0"):
        Settings.from_environ({"DIHERA_TRAIN_DELAY": "-1"}, node_id=0)


class _Profilings(http.server.BaseHTTPRequestHandler):
    received: list[tuple[str, str | None, dict[str, object]]] = []
    fail = False

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).received.append((self.path, self.headers.get("Authorization"), body))
        self.send_response(500 if type(self).fail else 200)
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *_: object) -> None:
        pass


def test_the_evaluator_reports_its_returns_to_the_di_server(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Profilings)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    token = tmp_path / "token"
    token.write_text("secret\n")
    url = profilings_url(f"http://127.0.0.1:{server.server_port}/", "ns/job-t07")
    assert url.endswith("/v2alpha1/job/ns.job-t07/profilings")
    try:
        reporter = MetricsReporter(http_sender(url, token))
        for value, iteration in ((20.0, 10), (180.0, 40), (150.0, 60)):
            reporter.evaluated(value, iteration)
        reporter.close()
        *_, last = _Profilings.received
        assert last == ("/v2alpha1/job/ns.job-t07/profilings", "Bearer secret",
                        {"evalReturn": 150.0, "evalReturnBest": 180.0, "evalIteration": 60,
                         "evalReturnHistory": [[10, 20.0], [40, 180.0], [60, 150.0]]})  # fmt: skip
        # the stop value's report is sent before evaluated() returns (the job ends with it), not by the thread
        reporter = MetricsReporter(http_sender(url, token))
        reporter.evaluated(196.0, 80, final=True)
        *_, last = _Profilings.received
        assert last[2]["evalReturn"] == 196.0 and last[2]["evalIteration"] == 80, last
        reporter.close()
        _Profilings.fail = True
        failing = MetricsReporter(http_sender(url, token))
        failing.evaluated(1.0, 1)
        failing.close()
        assert "dihera-metrics-failed error=HTTPError detail=HTTP_Error_500" in capsys.readouterr().out
        failing = MetricsReporter(http_sender(url, token))
        failing.evaluated(200.0, 90, final=True)  # tried twice, logged, and training's end is not held up
        assert capsys.readouterr().out.count("dihera-metrics-failed error=HTTPError attempt=") == 2
    finally:
        server.shutdown()


def test_an_older_report_in_flight_never_lands_after_the_stop_values() -> None:
    # measured in CI: the thread's report of iteration 565 (slow, the di-server under load) landed after the
    # final one, and the status of a job that reached the stop value said 85
    landed: list[int] = []
    first_started = threading.Event()

    def send(report: dict[str, object]) -> None:
        if report["evalIteration"] == 565:
            first_started.set()
            time.sleep(0.3)  # slow: still in flight when the final evaluation comes
        landed.append(int(report["evalIteration"]))  # type: ignore[call-overload]

    reporter = MetricsReporter(send)
    reporter.evaluated(85.0, 565)
    assert first_started.wait(5)
    reporter.evaluated(200.0, 605, final=True)
    reporter.evaluated(190.0, 645)  # after the final: never sent
    reporter.close()
    assert landed == [565, 605], landed


def test_the_learner_reports_its_newest_checkpoint_and_the_one_saved_on_sigterm_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Profilings)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    token = tmp_path / "token"
    token.write_text("secret\n")
    url = profilings_url(f"http://127.0.0.1:{server.server_port}", "ns/job")
    _Profilings.received, _Profilings.fail = [], False
    try:
        reporter = CheckpointReporter(http_sender(url, token, timeout=2.0), "learner-0", clock=lambda: 1795000000.0)
        reporter.saved(100, "/ckpt/learner-0/iteration_100.pth.tar")
        deadline = time.monotonic() + 10
        while not _Profilings.received and time.monotonic() < deadline:
            time.sleep(0.05)
        reporter.saved(137, "/ckpt/learner-0/iteration_137.pth.tar", final=True)  # sent before it returns
        *_, last = _Profilings.received
        assert last == ("/v2alpha1/job/ns.job/profilings", "Bearer secret", {"checkpoint": {
            "iteration": 137, "path": "/ckpt/learner-0/iteration_137.pth.tar", "replica": "learner-0",
            "time": "2026-11-18T11:06:40Z", "onTerm": True}})  # fmt: skip
        assert _Profilings.received[0][2]["checkpoint"]["iteration"] == 100  # type: ignore[index]
        _Profilings.fail = True
        for n in (1, 2, 3):
            reporter.saved(200 + n, "x", final=True)
        failed = [x for x in capsys.readouterr().out.splitlines() if x.startswith("dihera-metrics-failed")]
        assert failed == ["dihera-metrics-failed error=HTTPError detail=HTTP_Error_500:_Internal_Server_Error"], failed
    finally:
        _Profilings.fail = False
        server.shutdown()


def test_a_checkpoint_report_that_failed_is_sent_again_unless_a_newer_one_replaced_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Under load the di-server may not answer in time: the periodic reports are sent again (the CI run that
    lost every report after the first: the status kept iteration 5 of a trial that saved up to 405)."""
    sent: list[int] = []
    fail = {"left": 2}

    def send(body: dict[str, Any]) -> None:
        if fail["left"] > 0:
            fail["left"] -= 1
            raise TimeoutError("timed out")
        sent.append(body["checkpoint"]["iteration"])

    reporter = CheckpointReporter(send, "learner-0", retry_seconds=0.05, attempts=4)
    reporter.saved(5, "/ckpt/learner-0/iteration_5.pth.tar")  # fails twice, then goes through
    deadline = time.monotonic() + 10
    while not sent and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sent == [5]
    fail["left"] = 100  # the di-server down: a report is tried `attempts` times, then the next one is awaited
    reporter.saved(105, "/ckpt/learner-0/iteration_105.pth.tar")
    time.sleep(0.5)
    fail["left"] = 0
    reporter.saved(205, "/ckpt/learner-0/iteration_205.pth.tar")
    while sent[-1] != 205 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sent == [5, 205], sent
    failed = [x for x in capsys.readouterr().out.splitlines() if x.startswith("dihera-metrics-failed")]
    assert failed == ["dihera-metrics-failed error=TimeoutError detail=timed_out"], failed  # logged once


def test_settings_report_every_invalid_variable_with_what_is_valid() -> None:
    environ = {
        "DIHERA_TRAIN_ITER_BUDGET": "0",
        "DIHERA_LEARNER_FRESH": "0",
        "DIHERA_LEARNER_WAIT": "soon",
        "DIHERA_EXTRA_PARAMS": "1.5e6",
    }
    with pytest.raises(ValueError) as raised:
        Settings.from_environ(environ, node_id=0)
    assert str(raised.value) == (
        "invalid environment: DIHERA_TRAIN_ITER_BUDGET='0': want an integer > 0; "
        "DIHERA_LEARNER_FRESH='0': want a number > 0; DIHERA_LEARNER_WAIT='soon': want a number >= 0; "
        "DIHERA_EXTRA_PARAMS='1.5e6': want an integer >= 0"
    )


BEACON = Sighting("learner-0-7-1000", train_iter=40, at=100.0)


@pytest.mark.parametrize(
    ("sighting", "now", "waited", "finish", "expected"),
    [
        (None, 100.0, 0.0, False, Verdict.WAIT),  # no learner heard yet
        (BEACON, 105.0, 0.0, False, Verdict.SEND),
        (BEACON, 110.0, 0.0, False, Verdict.SEND),  # exactly `fresh` old
        (BEACON, 110.1, 3.0, False, Verdict.WAIT),  # the learner went silent (killed, restarting)
        (BEACON, 105.0, 0.0, True, Verdict.SEND),
        (BEACON, 130.0, 3.0, True, Verdict.FINISH),  # the job ends: never hold the last batch
        (None, 100.0, 3.0, True, Verdict.FINISH),
        (None, 700.0, 600.0, False, Verdict.GIVE_UP),  # bounded: send anyway
        (BEACON, 900.0, 599.9, False, Verdict.WAIT),
    ],
)
def test_gate_sends_on_a_fresh_beacon_only_waiting_a_bounded_time(
    sighting: Sighting | None, now: float, waited: float, finish: bool, expected: Verdict
) -> None:
    assert verdict(sighting, now, waited, fresh=10.0, limit=600.0, finish=finish) is expected


def test_a_zero_wait_never_holds_a_batch() -> None:
    assert verdict(None, 0.0, 0.0, fresh=10.0, limit=0.0, finish=False) is Verdict.GIVE_UP


def test_a_learner_is_reported_first_then_only_when_it_is_another_process() -> None:
    assert is_new_learner(None, BEACON)
    assert not is_new_learner(BEACON.incarnation, Sighting(BEACON.incarnation, 80, at=200.0))
    restarted = Sighting(incarnation_id("learner-0", 7, 2000.25), 0, at=300.0)
    assert is_new_learner(BEACON.incarnation, restarted)


def test_incarnation_tells_a_restart_in_place_with_the_same_hostname_and_pid() -> None:
    assert incarnation_id("cartpole-dqn-learner-0", 7, 1764190000.1234) == "cartpole-dqn-learner-0-7-1764190000123"
    assert incarnation_id("h", 7, 1764190000.0) != incarnation_id("h", 7, 1764190001.0)


def _has(python: str | None, module: str) -> bool:
    if not python:
        return False
    return subprocess.run([python, "-c", f"import {module}"], capture_output=True, check=False).returncode == 0


_BIGMODEL_CHECK = """
import pickle, torch
from torch import nn
from cartpole_dqn.bigmodel import attach_extra, extra_digest, extra_side, parameter_count, state_bytes

class Net(nn.Module):  # a DQN's shape: its forward names the layers it uses
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(4, 8), nn.Linear(8, 2)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))

def model(seed, extra):
    torch.manual_seed(seed)
    m = Net()
    base = parameter_count(m)
    if extra:
        attach_extra(m, extra, seed + 100)
    return m, base, torch.rand(3)  # the global stream after construction

assert extra_side(1690000) == 1300 and extra_side(1) == 1
plain, base, after_plain = model(0, 0)
learner, _, after_learner = model(0, 1690000)
collector, _, _ = model(0 + 2, 1690000)
assert torch.equal(after_plain, after_learner), "the extra weight moved torch's global RNG"
assert parameter_count(learner) == base + 1690000
assert not any(p.requires_grad for p in learner.dihera_extra.parameters())
x = torch.rand(5, 4)
assert torch.equal(plain(x), learner(x)), "the extra weight changed the forward pass"
assert extra_digest(learner) != extra_digest(collector) and len(extra_digest(learner)) == 16
assert 6_700_000 < state_bytes(learner) < 6_900_000, state_bytes(learner)
collector.load_state_dict(pickle.loads(pickle.dumps(learner.state_dict())))  # as ModelExchanger delivers it
assert extra_digest(collector) == extra_digest(learner)
print("ok")
"""


@pytest.mark.skipif(not _has(TORCH_PYTHON, "torch"), reason="no torch: set DIHERA_TORCH_PYTHON")
def test_extra_weight_is_seeded_per_process_unused_and_travels_with_the_state_dict() -> None:
    env = {**os.environ, "PYTHONPATH": str(EXAMPLE), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [TORCH_PYTHON, "-c", _BIGMODEL_CHECK], env=env, capture_output=True, text=True, check=False, timeout=300
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]


#: The DI-engine internals the beacon and the kick rely on (cartpole_dqn/link.py), read from DI-engine 0.5.3.
_DING_CHECK = """
from ding.framework import task
from ding.framework.task import Task
from ding.framework.middleware import ContextExchanger, ModelExchanger
from ding.framework.parallel import Parallel
assert Task._wrap_event_name(task, "dihera_learner") == "task.dihera_learner"
assert callable(ContextExchanger.fetch) and callable(ModelExchanger._send_model)
assert callable(ContextExchanger.merge)  # where the learner waits for data (dihera_figures times it)
assert callable(Parallel.emit)
import cartpole_dqn.main  # every import of the example resolves
from cartpole_dqn.settings import Settings
cfg = cartpole_dqn.main._config(Settings(rank=0, world=1, learning_rate=0.5, seed=7))
assert (cfg.policy.learn.learning_rate, cfg.seed) == (0.5, 7), (cfg.policy.learn.learning_rate, cfg.seed)
print("ok")
"""


@pytest.mark.skipif(not _has(DING_PYTHON, "ding"), reason="no DI-engine: set DIHERA_DING_PYTHON")
def test_the_di_engine_internals_the_beacon_and_the_kick_use_exist() -> None:
    path = os.pathsep.join((str(EXAMPLE), str(EXAMPLE.parent / "figures")))  # the image's PYTHONPATH too
    env = {**os.environ, "PYTHONPATH": path, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [str(DING_PYTHON), "-c", _DING_CHECK], env=env, capture_output=True, text=True, check=False, timeout=300
    )
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]
