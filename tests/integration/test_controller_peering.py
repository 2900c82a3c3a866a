"""Two controller replicas on one namespace (marker ``cluster``): kopf peering lets only one act.

Both run as ``dihera controller`` subprocesses with the chart's RBAC token (not ``--standalone``), share a
KopfPeering made for the test and differ in ``--priority`` and ``--identity``. The test shows:

1. the low replica, alone, becomes active; once the high one joins, the low one logs that it pauses in
   favour of the high one (by name) and the high one resumes;
2. a DIJob is then handled by the high replica only: its log names the job, its ``/metrics`` count the
   writes (objects, status, Events), the low replica's log never names the job and it made no write
   and ran no reconcile;
3. after a SIGKILL of the high replica (no goodbye in the peering object) the low one resumes once the
   dead replica's keep-alive expires (``--peering-lifetime``), drops its record, and handles a second
   DIJob (created right after the kill) to Succeeded.

kopf's peering CRDs come from the chart (``helm template``). Like the DIJob CRD they are cluster-wide and
shared, so they are created when absent and never deleted (test_chart_install restores CRDs to what it
found, and installs with ``--take-ownership``). The KopfPeering lives in the test's namespace and goes
with it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from prometheus_client.parser import text_string_to_metric_families

from dihera.kube.jobs import JobStore
from dihera.schema import GROUP, PLURAL, VERSION
from tests.chart.helm import render
from tests.integration.test_controller_jobs import (  # noqa: F401  (fixtures)
    DIHERA,
    Poll,
    _free_port,
    controller_kubeconfig,
    dijob_events,
    manifest,
    phase_is,
    task,
)

pytestmark = pytest.mark.cluster

LIFETIME = 10  # seconds a keep-alive counts (kopf renews it every 1-5 s at this lifetime)
PEERING_LOGGER = "logger=kopf._core.engines.peering"


class Replica:
    """One ``dihera controller`` replica in the peering; log in ``log``, metrics on ``metrics_port``."""

    def __init__(self, identity: str, priority: int, kubeconfig: Path, namespace: str, peering: str, log: Path) -> None:
        self.identity, self.priority, self.log = identity, priority, log
        self.metrics_port = _free_port()
        self.argv = [DIHERA, "controller", "--kubeconfig", str(kubeconfig), "-n", namespace]
        self.argv += ["--peering", peering, "--priority", str(priority), "--identity", identity]
        self.argv += ["--peering-lifetime", str(LIFETIME), "--metrics-port", str(self.metrics_port)]
        self.argv += ["--health-port", "0"]
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = {k: v for k, v in os.environ.items() if k not in ("DIHERA_POD_NAME", "POD_ID")}
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(self.argv, stdout=out, stderr=subprocess.STDOUT, env=env)

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=30)

    def lines(self, *needles: str) -> list[str]:
        """Log lines containing every needle."""
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return [line for line in text.splitlines() if all(n in line for n in needles)]

    def resumes(self) -> int:
        return len(self.lines(PEERING_LOGGER, "Resuming operations"))

    def metrics(self) -> dict[str, float]:
        """``dihera_api_writes_total{verb,kind}`` as ``verb kind`` -> count, and ``reconciles`` (passes run)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5) as rsp:
            text = rsp.read().decode()
        found: dict[str, float] = {"reconciles": 0.0}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == "dihera_api_writes_total":
                    found[f"{sample.labels['verb']} {sample.labels['kind']}"] = sample.value
                elif sample.name == "dihera_reconcile_duration_seconds_count":
                    found["reconciles"] = sample.value
        return found

    def writes(self) -> float:
        return sum(v for k, v in self.metrics().items() if k != "reconciles")


@pytest.fixture(scope="session")
def kopf_crds(cluster: client.ApiClient, poll: Poll) -> None:
    """kopf's peering CRDs as the chart renders them, created if absent (shared: never deleted)."""
    ext = client.ApiextensionsV1Api(cluster)
    crds = [d for d in render() if d["kind"] == "CustomResourceDefinition" and d["spec"]["group"] == "kopf.dev"]
    assert {c["metadata"]["name"] for c in crds} == {"kopfpeerings.kopf.dev", "clusterkopfpeerings.kopf.dev"}
    for crd in crds:
        try:
            ext.create_custom_resource_definition(crd)  # type: ignore[arg-type]  # a dict body is accepted
        except ApiException as err:
            if err.status != 409:
                raise

    def established() -> bool:
        for crd in crds:
            status = ext.read_custom_resource_definition(crd["metadata"]["name"]).status
            conditions = (status.conditions if status else None) or []
            if not any(c.type == "Established" and c.status == "True" for c in conditions):
                return False
        return True

    poll(established, 60, "kopf's peering CRDs Established")


@pytest.fixture
def peering(kopf_crds: None, cluster: client.ApiClient, namespace: str) -> str:
    """A KopfPeering of the test's own name in the test's namespace (deleted with the namespace)."""
    name = f"dihera-peering-{uuid.uuid4().hex[:6]}"
    body = {"apiVersion": "kopf.dev/v1", "kind": "KopfPeering", "metadata": {"name": name, "namespace": namespace}}
    client.CustomObjectsApi(cluster).create_namespaced_custom_object("kopf.dev", "v1", namespace, "kopfpeerings", body)
    return name


@pytest.fixture
def replicas(
    controller_kubeconfig: Path,  # noqa: F811
    dijob_crd: None,
    namespace: str,
    peering: str,
    cluster: client.ApiClient,
    tmp_path: Path,
) -> Iterator[tuple[Replica, Replica]]:
    """(low, high): priorities 100 and 200 in one peering on one namespace; not started yet."""
    low = Replica("ctl-low", 100, controller_kubeconfig, namespace, peering, tmp_path / "low.log")
    high = Replica("ctl-high", 200, controller_kubeconfig, namespace, peering, tmp_path / "high.log")
    try:
        yield low, high
    finally:
        for r in (high, low):
            r.kill(signal.SIGTERM)
            print(f"----- {r.identity} -----\n" + "\n".join(r.lines("")[-200:]))  # shown when the test failed
        found: Any = client.CustomObjectsApi(cluster).list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)
        for job in found["items"]:
            print(f"DIJob {job['metadata']['name']}: {job.get('status')}")
        for r in (high, low):
            errors = [line for line in r.lines("level=ERROR") if "403" in line]
            assert not errors, f"{r.identity} lacked a permission:\n{errors[0]}"


def peers(cluster: client.ApiClient, namespace: str, name: str) -> dict[str, Any]:
    """The peering object's status: identity -> {priority, lifetime, lastseen}."""
    obj: Any = client.CustomObjectsApi(cluster).get_namespaced_custom_object(
        "kopf.dev", "v1", namespace, "kopfpeerings", name
    )
    return dict(obj.get("status") or {})


def succeeded_events(cluster: client.ApiClient, namespace: str, name: str) -> list[tuple[str, str]] | None:
    """The DIJob's Events once JobSucceeded is among them (the controller posts one Event per call)."""
    events = dijob_events(cluster, namespace, name)
    return events if any(reason == "JobSucceeded" for reason, _ in events) else None


def test_only_the_higher_priority_replica_acts_and_the_other_takes_over_after_sigkill(
    replicas: tuple[Replica, Replica], cluster: client.ApiClient, namespace: str, peering: str, poll: Poll
) -> None:
    low, high = replicas
    jobs = JobStore(cluster)
    timings: dict[str, float] = {}

    # 1. low alone becomes active; high joins: low pauses in favour of ctl-high, high resumes.
    t = time.monotonic()
    low.start()
    poll(low.resumes, 60, "ctl-low, alone, to resume (become active)")
    timings["low active alone"] = time.monotonic() - t
    assert low.lines("controller started", f"peering {peering} as ctl-low priority 100 lifetime {LIFETIME}s")

    t = time.monotonic()
    high.start()
    poll(high.resumes, 60, "ctl-high to resume (become active)")
    pauses = poll(lambda: low.lines(PEERING_LOGGER, "Pausing operations in favour of"), 60, "ctl-low to pause")
    timings["handover to high on join"] = time.monotonic() - t
    assert "ctl-high" in pauses[0] and "priority=200" in pauses[0], pauses[0]
    assert not high.lines(PEERING_LOGGER, "Pausing"), "ctl-high paused although it has the highest priority"
    assert set(peers(cluster, namespace, peering)) == {"ctl-low", "ctl-high"}
    assert {k: v["priority"] for k, v in peers(cluster, namespace, peering).items()} == {
        "ctl-low": 100,
        "ctl-high": 200,
    }
    low_before = low.metrics()
    assert low_before["reconciles"] == 0 and low.writes() == 0, f"ctl-low acted before any DIJob: {low_before}"

    # 2. a DIJob: only ctl-high acts on it.
    t = time.monotonic()
    first = "first"
    jobs.create(manifest(first, namespace, task("learner"), task("collector", 2)))
    poll(phase_is(jobs, namespace, first, "Succeeded"), 120, f"{first} Succeeded")
    timings["first job to Succeeded (ctl-high)"] = time.monotonic() - t
    events = poll(lambda: succeeded_events(cluster, namespace, first), 30, f"{first}'s JobSucceeded Event")

    tag = f"job={namespace}/{first}"
    assert high.lines(tag, "created ConfigMap") and high.lines(tag, "-> Succeeded"), "ctl-high did not handle it"
    assert not low.lines(tag), f"ctl-low acted on {first}: {low.lines(tag)}"
    by_high = high.metrics()
    assert by_high.get("create Workflow") == 1 and by_high.get("create ConfigMap") == 1, by_high
    assert by_high.get("patch DIJob/status", 0) >= 2, by_high
    assert by_high.get("create Event") == len(events), f"Events not all from ctl-high: {events} vs {by_high}"
    by_low = low.metrics()
    assert by_low["reconciles"] == 0 and low.writes() == 0, f"ctl-low acted while paused: {by_low}"

    # 3. SIGKILL ctl-high (its record stays in the peering object); a second DIJob waits for ctl-low.
    killed = time.monotonic()
    high.kill(signal.SIGKILL)
    second = "second"
    jobs.create(manifest(second, namespace, task("learner"), task("collector")))
    poll(lambda: low.resumes() >= 2, LIFETIME + 30, "ctl-low to resume after ctl-high died")
    timings["takeover after SIGKILL"] = time.monotonic() - killed
    assert timings["takeover after SIGKILL"] <= LIFETIME + 5, timings
    poll(lambda: set(peers(cluster, namespace, peering)) == {"ctl-low"}, 30, "ctl-high's record to be dropped")

    poll(phase_is(jobs, namespace, second, "Succeeded"), 120, f"{second} Succeeded")
    timings["second job to Succeeded (after kill)"] = time.monotonic() - killed
    tag2 = f"job={namespace}/{second}"
    assert low.lines(tag2, "created ConfigMap") and low.lines(tag2, "-> Succeeded"), "ctl-low did not handle it"
    assert not high.lines(tag2)
    events = poll(lambda: succeeded_events(cluster, namespace, second), 30, f"{second}'s JobSucceeded Event")
    by_low = low.metrics()
    assert by_low.get("create Workflow") == 1 and by_low.get("patch DIJob/status", 0) >= 2, by_low
    assert by_low.get("create Event") == len(events), f"Events not all from ctl-low: {events} vs {by_low}"
    assert (jobs.get(namespace, first) or {})["status"]["phase"] == "Succeeded"
    print("timings (s): " + ", ".join(f"{k} {v:.1f}" for k, v in timings.items()))
