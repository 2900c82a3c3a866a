"""Controller entry point settings (flags over the chart's DIHERA_* variables) and the per-job queue."""

from __future__ import annotations

import threading
import time

import pytest

from dihera.cli import build_parser
from dihera.cli.controller import settings_from_args
from dihera.controller.queue import ReconcileQueue


def settings(argv: list[str], env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    return settings_from_args(build_parser().parse_args(["controller", *argv]), env or {})


def test_defaults_watch_everything_on_loopback_with_peering() -> None:
    s = settings([])
    assert s.all_namespaces and s.namespaces == ()
    assert (s.bind_address, s.metrics_port, s.health_port) == ("127.0.0.1", 8080, 8081)
    assert s.peering == "dihera" and not s.standalone and s.priority > 0


def test_chart_variables_fill_in_what_flags_leave_out() -> None:
    env = {
        "DIHERA_WATCH_NAMESPACES": "a, b",
        "DIHERA_PEERING_NAME": "",
        "DIHERA_SERVER_URL": "http://s:1",
        "DIHERA_CONTROLLER_METRICS_PORT": "9090",
        "DIHERA_BIND_ADDRESS": "0.0.0.0",
    }
    s = settings([], env)
    assert s.namespaces == ("a", "b") and not s.all_namespaces
    assert s.standalone and s.render.server_url == "http://s:1"
    assert (s.bind_address, s.metrics_port) == ("0.0.0.0", 9090)
    flagged = settings(["-n", "x", "--metrics-port", "1", "--priority", "5"], env)
    assert flagged.namespaces == ("x",) and flagged.metrics_port == 1 and flagged.priority == 5


def test_peering_lifetime_and_identity_reach_kopf() -> None:
    from dihera.controller.run import kopf_settings

    s = settings(["-n", "a", "--peering", "p", "--priority", "7", "--peering-lifetime", "10", "--identity", "one"])
    assert (s.peering, s.priority, s.peering_lifetime, s.identity) == ("p", 7, 10, "one")
    kop = kopf_settings(s).peering
    assert (kop.name, kop.priority, kop.lifetime, kop.mandatory, kop.standalone) == ("p", 7, 10, True, False)
    assert not kop.clusterwide
    defaults = settings(["-n", "a"], {"DIHERA_POD_NAME": "dihera-controller-abc"})
    assert defaults.peering_lifetime == 60 and defaults.identity == "dihera-controller-abc"
    assert settings(["-n", "a"]).identity is None


def test_kopf_keeps_no_diff_base_and_the_sweep_interval_is_a_flag() -> None:
    from kopf._cogs.structs.bodies import Body

    from dihera.controller.run import NoDiffBase, kopf_settings

    kop = kopf_settings(settings(["-n", "a"]))
    assert isinstance(kop.persistence.diffbase_storage, NoDiffBase)
    body = Body({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "main"}]}})
    assert kop.persistence.diffbase_storage.build(body=body) == {}
    assert kop.persistence.diffbase_storage.fetch(body=body) is None
    assert settings(["-n", "a"]).resync_seconds == 300
    assert settings(["-n", "a", "--resync-seconds", "0"]).resync_seconds == 0


def test_peering_lifetime_too_short_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 5 seconds"):
        settings(["-n", "a", "--peering-lifetime", "4"])


def test_namespace_and_all_namespaces_exclude_each_other() -> None:
    with pytest.raises(SystemExit):
        settings(["-n", "a", "-A"])


def test_queue_runs_one_pass_at_a_time_and_coalesces_requests() -> None:
    entered, release = threading.Event(), threading.Event()
    calls: list[tuple[str, str]] = []

    def reconcile(ns: str, name: str) -> None:
        calls.append((ns, name))
        if len(calls) == 1:
            entered.set()
            release.wait(5)

    queue = ReconcileQueue(reconcile)
    queue.request("ns", "job")  # returns at once: a worker runs the pass
    assert entered.wait(5)
    for _ in range(5):
        queue.request("ns", "job")  # the running pass will run once more
    release.set()
    deadline = time.monotonic() + 5
    while len(calls) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.1)  # no third pass follows
    assert calls == [("ns", "job"), ("ns", "job")]
    queue.close()


def test_queue_serves_requests_queued_meanwhile_by_one_pass_and_jobs_in_parallel() -> None:
    """Requests for a job still waiting in the queue make no extra pass; other jobs run on other workers."""
    release = threading.Event()
    calls: list[str] = []
    lock = threading.Lock()

    def reconcile(ns: str, name: str) -> None:
        with lock:
            calls.append(name)
        if name.startswith("busy"):
            release.wait(5)

    queue = ReconcileQueue(reconcile, workers=2)
    queue.request("ns", "busy-a")
    queue.request("ns", "busy-b")  # both workers are now busy
    deadline = time.monotonic() + 5
    while len(calls) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    for _ in range(5):
        queue.request("ns", "waiting")
    assert queue.depth() == 1
    release.set()
    deadline = time.monotonic() + 5
    while len(calls) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.1)
    assert sorted(calls) == ["busy-a", "busy-b", "waiting"] and queue.depth() == 0
    queue.close()


def test_queue_retries_a_failed_pass() -> None:
    done = threading.Event()
    calls = []

    def reconcile(ns: str, name: str) -> None:
        calls.append(name)
        if len(calls) == 1:
            raise RuntimeError("transient")
        done.set()

    queue = ReconcileQueue(reconcile, retry_delays=(0.05,))
    queue.request("ns", "job")
    assert done.wait(5) and calls == ["job", "job"]
    queue.close()
