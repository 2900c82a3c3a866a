"""ci/build-tools.sh builds a program once when two runs want it at the same time (`make test` builds
Kueue in the background while a test's kueue-up may ask for it): the second waits on the tool's lock,
then finds the program built. Proven on `pause`, the smallest program (the standard library only)."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # `ci` is a top-level folder of the repo, not an installed package
    sys.path.insert(0, str(REPO))

from ci.devcluster.settings import read_versions  # noqa: E402

SCRIPT = REPO / "ci" / "build-tools.sh"

pytestmark = pytest.mark.skipif(shutil.which("go") is None, reason="needs Go (ci/build-tools.sh compiles pause)")


def _wait_for(path: Path, text: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while text not in (path.read_text() if path.exists() else ""):
        assert time.monotonic() < deadline, f"no {text!r} in {path} after {timeout}s: {path.read_text()!r}"
        time.sleep(0.05)


def test_two_runs_at_once_build_the_program_once(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    pinned = read_versions()
    kubernetes, argo = pinned["KUBERNETES_VERSION"], pinned["ARGO_VERSION"]
    lock = cache / "locks" / f"pause-{kubernetes}-{argo}.lock"
    lock.parent.mkdir(parents=True)
    env = {**os.environ, "DIHERA_CACHE": str(cache)}
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    with lock.open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # a build under way
        runs = []
        for log in logs:
            command = ["bash", str(SCRIPT), "pause"]
            runs.append(subprocess.Popen(command, env=env, stderr=log.open("w"), stdout=subprocess.DEVNULL))
            _wait_for(log, "another ci/build-tools.sh is building it; waiting")
        assert all(run.poll() is None for run in runs), "a run went on while the lock was held"
        assert not (cache / "bin" / "pause").exists()
    # the lock is free: one run builds pause, the other waits for it and then finds it built
    assert [run.wait(timeout=300) for run in runs] == [0, 0], [log.read_text() for log in logs]
    outputs = [log.read_text() for log in logs]
    assert sum(out.count("building pause") for out in outputs) == 1, outputs
    assert (cache / "bin" / "pause").is_file()
    assert (cache / "bin" / ".pause.version").read_text().strip().endswith(" static")
