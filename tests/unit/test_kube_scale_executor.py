"""JobScaler's per-job locks serialise requests and leave the table when idle (bounded by jobs in use)."""

from __future__ import annotations

import threading
import time

from kubernetes import client

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
