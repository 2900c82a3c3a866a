"""Timed reconciles: the wake-up scheduler and the queue running a pass again when it asks to."""

from __future__ import annotations

import threading
import time

from dihera.controller.wakeups import Wakeups
from dihera.controller.workqueue import PACE, WorkQueue


class Recorder:
    def __init__(self, expected: int) -> None:
        self.fired: list[str] = []
        self._lock = threading.Lock()
        self._expected = expected
        self.done = threading.Event()

    def __call__(self, key: str) -> None:
        with self._lock:
            self.fired.append(key)
            if len(self.fired) >= self._expected:
                self.done.set()


def test_wakeups_fire_in_due_order() -> None:
    rec = Recorder(3)
    w: Wakeups[str] = Wakeups(rec)
    w.at("late", 0.3)
    w.at("soon", 0.05)
    w.at("middle", 0.15)
    assert rec.done.wait(5)
    assert rec.fired == ["soon", "middle", "late"]
    assert w.pending() == {}
    w.close()


def test_only_the_earliest_wakeup_per_key_is_kept() -> None:
    rec = Recorder(1)
    w: Wakeups[str] = Wakeups(rec)
    w.at("job", 30)
    w.at("job", 0.05)  # earlier: replaces
    w.at("job", 60)  # later: ignored
    assert 0 < w.pending()["job"] <= 0.05
    assert rec.done.wait(5) and rec.fired == ["job"]
    w.close()


def test_a_cancelled_wakeup_does_not_fire() -> None:
    rec = Recorder(1)
    w: Wakeups[str] = Wakeups(rec)
    w.at("gone", 0.05)
    w.cancel("gone")
    w.at("kept", 0.1)
    assert rec.done.wait(5)
    assert rec.fired == ["kept"]
    w.close()


def test_closed_wakeups_take_no_more() -> None:
    w: Wakeups[str] = Wakeups(Recorder(1))
    w.close()
    w.at("job", 0.01)
    assert w.pending() == {}


def test_the_queue_runs_a_pass_again_after_the_seconds_it_returned() -> None:
    calls: list[str] = []
    done = threading.Event()

    def reconcile(ns: str, name: str) -> float | None:
        calls.append(name)
        if len(calls) == 2:
            done.set()
            return None
        return 0.05  # e.g. activeDeadlineSeconds falls due in 50 ms

    queue = WorkQueue(reconcile)
    queue.request("ns", "job")
    assert done.wait(5) and calls == ["job", "job"]
    assert queue.wakeups() == {}
    queue.close()


def burn_cpu(seconds: float) -> None:
    until = time.thread_time() + seconds
    while time.thread_time() < until:
        pass


def test_a_paced_request_waits_pace_times_the_cpu_of_the_last_pass() -> None:
    done = threading.Event()

    def reconcile(ns: str, name: str) -> None:
        burn_cpu(0.05)  # a big job's pass
        done.set()

    queue = WorkQueue(reconcile)
    queue.request_paced("ns", "job", 0.01)  # no pass yet: the window alone
    assert 0 < queue.wakeups()[("ns", "job")] <= 0.01
    assert done.wait(5)
    deadline = time.monotonic() + 5
    while queue.wakeups() and time.monotonic() < deadline:
        time.sleep(0.01)
    queue.request_paced("ns", "job", 0.01)
    due = queue.wakeups()[("ns", "job")]
    assert PACE * 0.05 * 0.95 <= due <= PACE * 0.05 * 3, due
    queue.request_paced("ns", "other", 0.01)  # another job's pace is its own
    assert queue.wakeups()[("ns", "other")] <= 0.01
    queue.forget("ns", "job")
    queue.request_paced("ns", "job", 0.01)  # forgotten: so is its cost
    assert queue.wakeups()[("ns", "job")] <= 0.01
    queue.close()


def test_forgetting_a_job_drops_its_wakeup() -> None:
    queue = WorkQueue(lambda ns, name: 60.0)
    queue.request("ns", "job")
    deadline = time.monotonic() + 5
    while not queue.wakeups() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert set(queue.wakeups()) == {("ns", "job")}
    queue.forget("ns", "job")
    assert queue.wakeups() == {}
    queue.close()


def test_a_failing_fire_does_not_stop_later_wakeups() -> None:
    rec = Recorder(1)

    def fire(key: str) -> None:
        if key == "bad":
            raise RuntimeError("boom")
        rec(key)

    w: Wakeups[str] = Wakeups(fire)
    w.at("bad", 0.01)
    w.at("good", 0.05)
    assert rec.done.wait(5) and rec.fired == ["good"]
    w.close()
