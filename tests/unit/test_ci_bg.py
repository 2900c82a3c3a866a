"""ci/bg.sh: `make test`'s background builds; `wait` reports success, or failure with the end of the log."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

BG = Path(__file__).resolve().parents[2] / "ci" / "bg.sh"


def bg(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"DIHERA_BG_DIR": str(state), "PATH": "/usr/bin:/bin"}
    return subprocess.run(["bash", str(BG), *args], env=env, capture_output=True, text=True, check=False, timeout=60)


def test_wait_reports_a_job_that_succeeded_with_its_last_line(tmp_path: Path) -> None:
    started = bg(tmp_path, "start", "ok", "bash", "-c", "echo first; sleep 2; echo last")
    assert started.returncode == 0, started.stderr
    assert f"log: {tmp_path}/ok.log" in started.stdout
    waited = bg(tmp_path, "wait", "ok")
    assert waited.returncode == 0, waited.stdout + waited.stderr
    assert "ok: done in" in waited.stdout
    assert "last line: last" in waited.stdout
    assert (tmp_path / "ok.rc").read_text().strip() == "0"


def test_wait_fails_on_a_job_that_failed_and_shows_the_end_of_its_log(tmp_path: Path) -> None:
    script = "for i in $(seq 1 60); do echo line $i; done; echo 'the real error' >&2; exit 3"
    assert bg(tmp_path, "start", "broken", "bash", "-c", script).returncode == 0
    waited = bg(tmp_path, "wait", "broken")
    assert waited.returncode == 1
    out = waited.stdout.splitlines()
    assert "line 60" in out and "the real error" in out
    assert "line 20" not in out  # only the end of the log
    assert "broken: FAILED (exit 3" in out[-1]


def test_wait_fails_on_a_job_killed_before_it_wrote_its_status(tmp_path: Path) -> None:
    assert bg(tmp_path, "start", "killed", "sleep", "30").returncode == 0
    pid = int((tmp_path / "killed.pid").read_text())
    children = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True, check=False).stdout.split()
    os.kill(pid, signal.SIGKILL)  # the job's shell: it never writes killed.rc
    for child in children:  # its command (the sleep)
        os.kill(int(child), signal.SIGTERM)
    waited = bg(tmp_path, "wait", "killed")
    assert waited.returncode == 1
    assert "killed: FAILED (exit" in waited.stdout


def test_wait_fails_on_a_job_never_started(tmp_path: Path) -> None:
    waited = bg(tmp_path, "wait", "missing")
    assert waited.returncode == 1
    assert "missing: never started" in waited.stdout
