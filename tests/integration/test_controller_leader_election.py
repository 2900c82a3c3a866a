"""Two controller replicas on one namespace (marker ``cluster``): leader election on a Lease lets only one act.

Both run as ``dihera controller`` subprocesses with the chart's RBAC token (not ``--standalone``) and share a
Lease made for the test in the chart's release namespace (where the chart's Role lets them renew it). The
test shows:

1. the first replica, alone, takes the Lease; ``kubectl get lease`` names it; the second one starts and
   stands by (the Lease stays the first's);
2. a DIJob is then handled by the holder only: its log names the job, its ``/metrics`` count the writes
   (objects, status, Events); the standby's log never names the job, it made no write, ran no reconcile
   and listed nothing;
3. after a SIGKILL of the holder (no goodbye in the Lease) the standby takes the Lease within the lease
   duration and handles a second DIJob (created right after the kill) to Succeeded; nothing is done twice;
4. a SIGTERM of the new holder gives the Lease up (no holder), as client-go's ReleaseOnCancel;
5. neither replica logged an ERROR (a namespaced install starts clean).
"""

from __future__ import annotations

import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from dihera.kube.jobs import JobStore
from dihera.schema import GROUP, PLURAL, VERSION
from tests.integration.conftest import Poll
from tests.integration.controllers import LEASE, RETRY, SA_NAMESPACE, Replica
from tests.integration.jobs import dijob_events, manifest, phase_is, task

pytestmark = pytest.mark.cluster

@pytest.fixture
def lease() -> str:
    return f"dihera-test-{uuid.uuid4().hex[:6]}"


@pytest.fixture
def replicas(
    controller_kubeconfig: Path,
    dijob_crd: None,
    namespace: str,
    lease: str,
    cluster: client.ApiClient,
    tmp_path: Path,
) -> Iterator[tuple[Replica, Replica]]:
    """(a, b): two replicas campaigning for one Lease, watching one namespace; not started yet."""
    a = Replica("ctl-a", controller_kubeconfig, namespace, lease, tmp_path / "a.log")
    b = Replica("ctl-b", controller_kubeconfig, namespace, lease, tmp_path / "b.log")
    try:
        yield a, b
    finally:
        for r in (a, b):
            r.kill(signal.SIGTERM)
            print(f"----- {r.identity} -----\n" + "\n".join(r.lines("")[-200:]))  # shown when the test failed
        found: Any = client.CustomObjectsApi(cluster).list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)
        for job in found["items"]:
            print(f"DIJob {job['metadata']['name']}: {job.get('status')}")
        client.CoordinationV1Api(cluster).delete_namespaced_lease(lease, SA_NAMESPACE)


def holder(cluster: client.ApiClient, lease: str) -> str | None:
    spec = client.CoordinationV1Api(cluster).read_namespaced_lease(lease, SA_NAMESPACE).spec
    return spec.holder_identity if spec is not None else None


def kubectl_get_lease(kubeconfig: Path, lease: str) -> str:
    """``kubectl get lease -n <ns>`` as a user runs it: its table (NAME, HOLDER, AGE)."""
    out = subprocess.run(
        ["kubectl", "--kubeconfig", str(kubeconfig), "get", "lease", "-n", SA_NAMESPACE, lease],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout


def succeeded_events(cluster: client.ApiClient, namespace: str, name: str) -> list[tuple[str, str]] | None:
    """The DIJob's Events once JobSucceeded is among them (the controller posts one Event per call)."""
    events = dijob_events(cluster, namespace, name)
    return events if any(reason == "JobSucceeded" for reason, _ in events) else None


def test_only_the_lease_holder_acts_and_a_standby_takes_over_within_the_lease_after_sigkill(
    replicas: tuple[Replica, Replica],
    cluster: client.ApiClient,
    kubeconfig: Path,
    namespace: str,
    lease: str,
    poll: Poll,
) -> None:
    a, b = replicas
    jobs = JobStore(cluster)
    timings: dict[str, float] = {}

    # 1. a alone takes the Lease; b starts and stands by.
    t = time.monotonic()
    a.start()
    poll(a.leading, 60, "ctl-a, alone, to take the Lease")
    timings["ctl-a leading"] = time.monotonic() - t
    assert holder(cluster, lease) == "ctl-a"
    table = kubectl_get_lease(kubeconfig, lease)
    assert table.split()[:3] == ["NAME", "HOLDER", "AGE"] and table.split()[3:5] == [lease, "ctl-a"], table
    assert a.lines("controller started", f"Lease {SA_NAMESPACE}/{lease} as ctl-a")
    b.start()
    poll(lambda: b.lines("campaigning for the Lease"), 60, "ctl-b to campaign")
    time.sleep(LEASE + RETRY)  # a whole lease: ctl-a renews it, ctl-b does not take it
    assert holder(cluster, lease) == "ctl-a" and not b.leading()
    standby = b.metrics()
    assert standby["reconciles"] == 0 and standby["requests"] == 0 and b.writes() == 0, standby

    # 2. a DIJob: only ctl-a acts on it.
    t = time.monotonic()
    first = "first"
    jobs.create(manifest(first, namespace, task("learner"), task("collector", 2)))
    poll(phase_is(jobs, namespace, first, "Succeeded"), 120, f"{first} Succeeded")
    timings["first job to Succeeded (ctl-a)"] = time.monotonic() - t
    events = poll(lambda: succeeded_events(cluster, namespace, first), 30, f"{first}'s JobSucceeded Event")
    tag = f"job={namespace}/{first}"
    assert a.lines(tag, "created ConfigMap") and a.lines(tag, "-> Succeeded"), "ctl-a did not handle it"
    assert not b.lines(tag), f"ctl-b acted on {first}: {b.lines(tag)}"
    by_a = a.metrics()
    assert by_a.get("create Workflow") == 1 and by_a.get("create ConfigMap") == 1, by_a
    assert by_a.get("patch DIJob/status", 0) >= 2, by_a
    assert by_a.get("create Event") == len(events), f"Events not all from ctl-a: {events} vs {by_a}"
    standby = b.metrics()
    assert standby["reconciles"] == 0 and standby["requests"] == 0 and b.writes() == 0, f"ctl-b acted: {standby}"

    # 3. SIGKILL ctl-a (the Lease still names it); a second DIJob waits for ctl-b.
    killed = time.monotonic()
    a.kill(signal.SIGKILL)
    second = "second"
    jobs.create(manifest(second, namespace, task("learner"), task("collector")))
    poll(b.leading, LEASE + 30, "ctl-b to take the Lease after ctl-a died")
    timings["takeover after SIGKILL"] = time.monotonic() - killed
    assert timings["takeover after SIGKILL"] <= LEASE + 2 * RETRY + 2, timings
    assert holder(cluster, lease) == "ctl-b"
    poll(phase_is(jobs, namespace, second, "Succeeded"), 120, f"{second} Succeeded")
    timings["second job to Succeeded (after kill)"] = time.monotonic() - killed
    tag2 = f"job={namespace}/{second}"
    assert b.lines(tag2, "created ConfigMap") and b.lines(tag2, "-> Succeeded"), "ctl-b did not handle it"
    assert not a.lines(tag2)
    events = poll(lambda: succeeded_events(cluster, namespace, second), 30, f"{second}'s JobSucceeded Event")
    by_b = b.metrics()
    # nothing twice: ctl-b made the second job's objects only; the first (finished) job got no new ones
    assert by_b.get("create Workflow") == 1 and by_b.get("create ConfigMap") == 1, by_b
    assert by_b.get("patch DIJob/status", 0) >= 2, by_b
    assert by_b.get("create Event") == len(events), f"Events not all from ctl-b: {events} vs {by_b}"
    assert (jobs.get(namespace, first) or {})["status"]["phase"] == "Succeeded"
    assert sum(1 for reason, _ in dijob_events(cluster, namespace, first) if reason == "JobSucceeded") == 1

    # 4. a graceful stop gives the Lease up at once.
    assert b.kill(signal.SIGTERM) == 0
    assert holder(cluster, lease) is None
    # 5. a clean log: no ERROR line from either replica
    for r in (a, b):
        assert not r.lines("level=ERROR"), f"{r.identity} logged an error:\n{r.lines('level=ERROR')[0]}"
    print("timings (s): " + ", ".join(f"{k} {v:.1f}" for k, v in timings.items()))
