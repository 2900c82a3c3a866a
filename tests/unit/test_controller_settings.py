"""Controller entry point settings (flags over the chart's DIHERA_* variables) and the per-job work queue."""

from __future__ import annotations

import threading
import time

import pytest

from dihera.cli import build_parser
from dihera.cli.controller import settings_from_args
from dihera.controller.workqueue import WorkQueue


def settings(argv: list[str], env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    return settings_from_args(build_parser().parse_args(["controller", *argv]), env or {})


def test_defaults_watch_everything_on_loopback_with_leader_election() -> None:
    s = settings([], {"DIHERA_POD_NAMESPACE": "dihera-system"})
    assert s.all_namespaces and s.namespaces == ()
    assert (s.bind_address, s.metrics_port, s.health_port) == ("127.0.0.1", 8080, 8081)
    election = s.leader_election
    assert election is not None and (election.namespace, election.name) == ("dihera-system", "dihera-controller")
    assert (election.lease_seconds, election.renew_seconds, election.retry_seconds) == (15, 10, 2)


def test_chart_variables_fill_in_what_flags_leave_out() -> None:
    env = {
        "DIHERA_WATCH_NAMESPACES": "a, b",
        "DIHERA_LEASE_NAME": "",
        "DIHERA_SERVER_URL": "http://s:1",
        "DIHERA_CONTROLLER_METRICS_PORT": "9090",
        "DIHERA_BIND_ADDRESS": "0.0.0.0",
    }
    s = settings([], env)
    assert s.namespaces == ("a", "b") and not s.all_namespaces
    assert s.leader_election is None and s.render.server_url == "http://s:1"
    assert (s.bind_address, s.metrics_port) == ("0.0.0.0", 9090)
    flagged = settings(["-n", "x", "--metrics-port", "1", "--leader-elect-resource-name", "mine"], env)
    assert flagged.namespaces == ("x",) and flagged.metrics_port == 1
    assert flagged.leader_election is not None and flagged.leader_election.name == "mine"


def test_the_lease_and_the_identity_come_from_flags_then_the_pod() -> None:
    timing = ["--leader-elect-lease-duration", "8", "--leader-elect-renew-deadline", "5"]
    s = settings(["-n", "a", *timing, "--leader-elect-retry-period", "1", "--identity", "one"])
    assert s.leader_election is not None and s.identity == "one"
    assert (s.leader_election.namespace, s.leader_election.lease_seconds) == ("a", 8)  # the one namespace watched
    assert (s.leader_election.renew_seconds, s.leader_election.retry_seconds) == (5, 1)
    pod = {"DIHERA_POD_NAME": "dihera-controller-abc", "DIHERA_POD_NAMESPACE": "dihera-system"}
    defaults = settings(["-n", "a", "-n", "b"], pod)
    assert defaults.identity == "dihera-controller-abc" and defaults.leader_election is not None
    assert defaults.leader_election.namespace == "dihera-system"
    assert settings(["-n", "a"]).identity is None
    assert settings(["-n", "a", "--standalone"]).leader_election is None


def test_a_lease_with_no_namespace_to_go_by_is_in_default_and_impossible_timing_is_refused() -> None:
    for argv in (["-n", "a", "-n", "b"], ["-n", "team-*"], []):  # a pattern names no namespace
        election = settings(argv).leader_election
        assert election is not None and election.namespace == "default"
    with pytest.raises(ValueError, match=r"must hold, not 10 > 10 > 1\.2 x 2"):
        settings(["-n", "a", "--leader-elect-lease-duration", "10"])


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

    queue = WorkQueue(reconcile)
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

    queue = WorkQueue(reconcile, workers=2)
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

    queue = WorkQueue(reconcile, retry_delays=(0.05,))
    queue.request("ns", "job")
    assert done.wait(5) and calls == ["job", "job"]
    queue.close()


PEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def test_the_di_servers_ca_reaches_the_pods_as_di_server_ca(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from dihera import load_job
    from dihera.render import render
    from tests.builders import job, task

    ca = tmp_path / "ca.crt"
    ca.write_text(PEM)
    for s in (settings(["--server-ca-file", str(ca)]), settings([], {"DIHERA_SERVER_CA_FILE": str(ca)})):
        assert s.render.server_ca == PEM
        wf = render(load_job(job(task("learner"), task("collector", replicas=2))), s.render).workflow
        replicas = [t for t in wf["spec"]["templates"] if "containerSet" in t]
        assert [t["name"] for t in replicas] == ["learner", "collector"]
        for template in replicas:
            for container in template["containerSet"]["containers"]:
                env = {e["name"]: e.get("value") for e in container["env"]}
                assert env["DI_SERVER_CA"] == PEM, (template["name"], container["name"])
    # the chart mounts it optionally: a Secret without ca.crt (a public CA's certificate) gives no variable
    absent = settings([], {"DIHERA_SERVER_CA_FILE": str(tmp_path / "none.crt")})
    assert absent.render.server_ca is None
    wf = render(load_job(job(task("learner"))), absent.render).workflow
    assert "DI_SERVER_CA" not in str(wf)
    with pytest.raises(ValueError, match=r"--server-ca-file: '/nope' cannot be read"):
        settings(["--server-ca-file", "/nope"])
    bad = tmp_path / "bad.crt"
    bad.write_text("hello")
    with pytest.raises(ValueError, match="server_ca: not a PEM certificate"):
        settings(["--server-ca-file", str(bad)])
