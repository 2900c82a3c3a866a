"""Two controller replicas on one namespace (marker ``cluster``): leader election on a Lease lets only one act.

Both run as ``dihera controller`` subprocesses with the chart's RBAC token (not ``--standalone``) and share a
Lease made for the test in the chart's release namespace (where the chart's Role lets them renew it). The
test shows:

1. the first replica, alone, takes the Lease; ``kubectl get lease`` names it; the second one starts and
   stands by (the Lease stays the first's);
2. a DIJob is then handled by the holder only: its log names the job, its ``/metrics`` count the writes
   (objects, status, Events); the standby's log never names the job, it made no write, ran no reconcile
   and listed nothing;
3. a burst of 20 DIJobs, the holder SIGKILLed in its middle (no goodbye in the Lease): the standby takes the
   Lease within the lease duration and brings every job to Succeeded; nothing is done twice (one Workflow
   per job, no Workflow made by both, one JobSucceeded Event each, the standby's creations only what the
   holder had not made);
4. a SIGTERM of the new holder gives the Lease up (no holder), as client-go's ReleaseOnCancel;
5. neither replica logged an ERROR (a namespaced install starts clean).
"""

from __future__ import annotations

import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from dihera.constants import LABEL_JOB
from dihera.kube.jobs import JobStore
from dihera.schema import GROUP, PLURAL, VERSION
from tests.integration.conftest import Poll
from tests.integration.controllers import LEASE, RETRY, SA_NAMESPACE, Replica
from tests.integration.jobs import dijob_events, manifest, phase_is, task

pytestmark = [pytest.mark.cluster, pytest.mark.exclusive]

#: The burst of step 3, and how many of its jobs ctl-a has started (made objects for) when it is killed.
BURST, KILL_AFTER = 20, 4


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


def create_all(jobs: JobStore, namespace: str, names: list[str]) -> None:
    """Create the burst's DIJobs one after another, as fast as the API server takes them."""
    for name in names:
        jobs.create(manifest(name, namespace, task("learner"), task("collector")))


def created_workflows(replica: Replica, namespace: str, names: list[str]) -> set[str]:
    """The jobs among ``names`` whose Workflow ``replica`` logged it created (its "created ..." line)."""
    logged = {name: replica.lines(f"job={namespace}/{name}", "created ") for name in names}
    return {name for name, lines in logged.items() if any("Workflow " in line for line in lines)}


def workflows_by_job(cluster: client.ApiClient, namespace: str) -> dict[str, int]:
    """Job name -> how many Workflows carry its label."""
    found: Any = client.CustomObjectsApi(cluster).list_namespaced_custom_object(
        "argoproj.io", "v1alpha1", namespace, "workflows"
    )
    counts: dict[str, int] = {}
    for wf in found["items"]:
        job = (wf["metadata"].get("labels") or {}).get(LABEL_JOB, "")
        counts[job] = counts.get(job, 0) + 1
    return counts


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

    # 3. A burst of BURST DIJobs; ctl-a is SIGKILLed in its middle (the Lease still names it), once it has
    # made the objects of a few of them. ctl-b takes the Lease and finishes the rest: every job Succeeded
    # with one Workflow, no object or terminal Event made twice, ctl-b making only what ctl-a had not.
    burst = [f"burst-{i:02d}" for i in range(BURST)]
    creating = threading.Thread(target=create_all, args=(jobs, namespace, burst))
    creating.start()
    poll(lambda: len(created_workflows(a, namespace, burst)) >= KILL_AFTER, 60, f"ctl-a to start {KILL_AFTER} jobs")
    killed = time.monotonic()
    a.kill(signal.SIGKILL)
    by_killed = created_workflows(a, namespace, burst)
    creating.join(timeout=60)
    assert not creating.is_alive(), "the burst's creations did not finish"
    poll(b.leading, LEASE + 30, "ctl-b to take the Lease after ctl-a died")
    timings["takeover after SIGKILL"] = time.monotonic() - killed
    assert timings["takeover after SIGKILL"] <= LEASE + 2 * RETRY + 2, timings
    assert holder(cluster, lease) == "ctl-b"
    for name in burst:
        poll(phase_is(jobs, namespace, name, "Succeeded"), 120, f"{name} Succeeded")
    timings[f"{BURST} jobs to Succeeded (ctl-a killed after starting {len(by_killed)})"] = time.monotonic() - killed
    assert KILL_AFTER <= len(by_killed) < BURST, f"ctl-a was not killed mid-burst: it started {sorted(by_killed)}"
    a_made, b_made = created_workflows(a, namespace, burst), created_workflows(b, namespace, burst)
    assert not a_made & b_made, f"a Workflow created by both replicas: {sorted(a_made & b_made)}"
    assert not b.lines(f"job={namespace}/{first}"), "ctl-b acted on the first (finished) job"
    workflows = workflows_by_job(cluster, namespace)
    doubled = {job: n for job, n in workflows.items() if n != 1}
    assert not doubled and set(workflows) == {first, *burst}, f"Workflows per job: {workflows}"
    for name in (first, *burst):
        ended = poll(lambda name=name: succeeded_events(cluster, namespace, name), 30, f"{name}'s JobSucceeded")
        assert [r for r, _ in ended].count("JobSucceeded") == 1, f"{name}: {ended}"
    # ctl-b's writes: the Workflows ctl-a had not made (the ones it made, by its log, or made unlogged
    # before its death: those ctl-b found existing), never one more
    made_by_b = b.metrics().get("create Workflow", 0)
    assert made_by_b == len(b_made) and len(a_made) + made_by_b <= BURST, (sorted(a_made), b.metrics())
    assert made_by_b >= 1, "ctl-b made none of the burst's Workflows: the kill came after the burst"

    # 4. a graceful stop gives the Lease up at once.
    assert b.kill(signal.SIGTERM) == 0
    assert holder(cluster, lease) is None
    # 5. a clean log: no ERROR line from either replica
    for r in (a, b):
        assert not r.lines("level=ERROR"), f"{r.identity} logged an error:\n{r.lines('level=ERROR')[0]}"
    print("timings (s): " + ", ".join(f"{k} {v:.1f}" for k, v in timings.items()))
