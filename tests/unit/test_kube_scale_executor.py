"""JobScaler's per-job locks serialise requests and leave the table when idle (bounded by jobs in use)."""

from __future__ import annotations

import threading
import time

import pytest
from kubernetes import client

from dihera.errors import ScaleConflict
from dihera.kube import scale_executor
from dihera.kube.scale_executor import JobScaler


def test_idle_jobs_leave_no_lock_behind() -> None:
    scaler = JobScaler(client.ApiClient())  # no request is sent: only the lock table is used
    for i in range(1000):
        with scaler._locked(f"ns/job-{i}"):
            assert scaler.locked_jobs == 1
    assert scaler.locked_jobs == 0


def test_one_job_is_serialised_and_its_lock_goes_with_the_last_user() -> None:
    scaler = JobScaler(client.ApiClient())
    inside: list[str] = []
    overlap = threading.Event()
    first_in = threading.Event()

    def use(name: str) -> None:
        with scaler._locked("ns/job"):
            if inside:
                overlap.set()
            inside.append(name)
            first_in.set()
            time.sleep(0.05)
            inside.remove(name)

    threads = [threading.Thread(target=use, args=(f"t{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    first_in.wait(5)
    assert scaler.locked_jobs == 1
    for t in threads:
        t.join(5)
    assert not overlap.is_set() and scaler.locked_jobs == 0


def test_lost_races_are_retried_after_growing_jittered_pauses_then_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    pauses: list[float] = []
    monkeypatch.setattr(scale_executor.time, "sleep", pauses.append)
    scaler = JobScaler(client.ApiClient(), attempts=6)
    losses = iter(range(3))

    def step() -> str:  # loses three races, then wins
        if next(losses, None) is not None:
            raise scale_executor._Conflict()
        return "written"

    assert scaler._retry(step) == "written"
    assert len(pauses) == 3
    assert all(0 <= p <= scale_executor.CONFLICT_PAUSE * 2**i for i, p in enumerate(pauses)), pauses

    pauses.clear()

    def always() -> str:
        raise scale_executor._Conflict()

    with pytest.raises(ScaleConflict, match="gave up after 6 resourceVersion conflicts"):
        scaler._retry(always)
    assert len(pauses) == 5  # no pause after the last attempt
    assert max(pauses) <= scale_executor.CONFLICT_PAUSE_CAP
