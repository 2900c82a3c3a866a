"""The controller shares DIJobs with other writers without losing their data or looping on a refusal.

- The di-server records ``status.profilings`` while the controller rewrites the status: the
  controller's write carries a resourceVersion precondition, so no profiling is erased.
- A permanent scale refusal is one ``ScaleRefused`` Event and no retry loop (counted with the
  controller's own metrics).

The controller runs as in test_controller_jobs.py (a subprocess with the chart's ServiceAccount);
the di-server in-process as in test_server_scaling.py (the chart's server ServiceAccount).
"""

from __future__ import annotations

import re
import threading
import time
import urllib.request
from typing import Any

import httpx
import pytest
from kubernetes import client

from dihera.kube.jobs import JobStore
from dihera.kube.scale_executor import JobScaler
from dihera.membership import Membership, Replica
from dihera.scaling import ScaleRequest
from tests.integration.conftest import Poll
from tests.integration.controllers import Controller
from tests.integration.jobs import dijob_events, manifest, task
from tests.integration.servers import sa_token

pytestmark = pytest.mark.cluster
LONG = {"sim.dihera.io/run-seconds": "600"}


def metric(ctl: Controller, name: str) -> float:
    """The sum of a controller metric's samples (0 when absent)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{ctl.metrics_port}/metrics", timeout=5) as resp:
        text = resp.read().decode()
    pattern = re.compile(rf"^{re.escape(name)}(\{{[^}}]*\}})? (\S+)$", re.M)
    return sum(float(m.group(2)) for m in pattern.finditer(text))


def running(jobs: JobStore, namespace: str, name: str, generation: int) -> dict[str, Any] | None:
    status = ((jobs.get(namespace, name) or {}).get("status")) or {}
    ok = status.get("phase") == "Running" and status.get("membershipGeneration") == generation
    return status if ok else None


def test_profilings_written_by_the_server_survive_the_controllers_status_writes(
    controller: Controller,
    cluster: client.ApiClient,
    namespace: str,
    server: str,
    poll: Poll,
) -> None:
    name = "profiled"
    jobs = JobStore(cluster)
    jobs.create(manifest(name, namespace, task("learner", **LONG), task("collector", 2, **LONG), maxReplicas=8))
    poll(lambda: running(jobs, namespace, name, 1), 90, f"{name} Running")
    token = sa_token(cluster, namespace, "profiler", ["get"], report=True)
    http = httpx.Client(base_url=server, headers={"Authorization": f"Bearer {token}"}, timeout=30)
    writes_before = metric(controller, "dihera_api_writes_total")
    stop = threading.Event()
    sent: list[str] = []

    def record() -> None:  # the di-server writes profilings as fast as it can while the job is rescaled
        i = 0
        while not stop.is_set():  # 64 keys in turn (status.profilings holds at most MAX_KEYS), each newer value
            key = f"step{i % 64}"
            resp = http.post(f"/v2alpha1/job/{namespace}.{name}/profilings", json={key: {"fps": i}})
            assert resp.status_code == 200, resp.text
            sent.append(key)
            i += 1

    writer = threading.Thread(target=record, daemon=True)
    writer.start()
    scaler = JobScaler(cluster)
    try:  # each scale makes the controller rewrite the status several times (Rescheduling, Running)
        steps = [ScaleRequest.add("collector", 2), ScaleRequest.remove("collector", 1)] * 2
        for generation, step in enumerate(steps, 2):
            scaler.scale(namespace, name, step)
            poll(lambda g=generation: running(jobs, namespace, name, g), 90, f"generation {generation} Running")
    finally:
        stop.set()
        writer.join(30)
    status_writes = metric(controller, "dihera_api_writes_total") - writes_before
    conflicts = metric(controller, "dihera_status_conflicts_total")
    print(
        f"{len(sent)} profilings; controller API writes: {status_writes:.0f}; status conflicts {conflicts:.0f}"
    )
    assert len(sent) >= 10 and status_writes >= 8
    profilings = ((jobs.get(namespace, name) or {}).get("status") or {}).get("profilings") or {}
    last = {key: {"fps": i} for i, key in enumerate(sent)}  # each key's newest value
    lost = [k for k, v in last.items() if profilings.get(k) != v]
    assert not lost, f"{len(lost)} of {len(last)} keys' newest values erased by status writes: {lost[:10]}"


def test_a_permanent_scale_refusal_is_one_event_and_no_retry_loop(
    controller: Controller,
    cluster: client.ApiClient,
    namespace: str,
    poll: Poll,
) -> None:
    name = "refused"
    jobs = JobStore(cluster)
    jobs.create(manifest(name, namespace, task("learner", **LONG), task("collector", 2, **LONG)))
    poll(lambda: running(jobs, namespace, name, 1), 90, f"{name} Running")
    JobScaler(cluster).scale(namespace, name, ScaleRequest.remove_named(["collector-1"]))
    poll(lambda: running(jobs, namespace, name, 2), 90, "collector-1 retired (generation 2)")
    # by hand, the membership takes back the retired collector-1: a DAG task name never returns
    core = client.CoreV1Api(cluster)
    data = core.read_namespaced_config_map(f"di-{name}", namespace).data
    now = Membership.from_json(data["membership.json"])
    back = Membership(3, tuple(sorted((*now.replicas, Replica(2, "collector", 1)))))
    core.patch_namespaced_config_map(f"di-{name}", namespace, {"data": {"membership.json": back.to_json()}})
    # the controller watches DIJobs, Workflows and pods, not ConfigMaps: a label on the DIJob starts the pass
    # (otherwise it waits for the next Workflow or pod event, which Argo v4 sends less often than v3)
    client.CustomObjectsApi(cluster).patch_namespaced_custom_object(
        "diengine.opendilab.org", "v2alpha1", namespace, "dijobs", name, {"metadata": {"labels": {"prod": "cm"}}}
    )

    def refusals() -> list[str]:
        return [m for r, m in dijob_events(cluster, namespace, name) if r == "ScaleRefused"]

    (first,) = poll(refusals, 60, "a ScaleRefused event")
    assert "collector-1" in first and "cannot return" in first
    reconciles = metric(controller, "dihera_reconcile_duration_seconds_count")
    errors = metric(controller, "dihera_reconcile_errors_total")
    # prod the job: every pass meets the same refusal; a retry queue would also fire at 1, 2, 5 and 10 s
    for i in range(3):
        client.CustomObjectsApi(cluster).patch_namespaced_custom_object(
            "diengine.opendilab.org", "v2alpha1", namespace, "dijobs", name, {"metadata": {"labels": {"prod": str(i)}}}
        )
        time.sleep(1)
    time.sleep(20)
    passes = metric(controller, "dihera_reconcile_duration_seconds_count") - reconciles
    print(f"reconciles in the 23 s after the refusal: {passes:.0f}")
    assert refusals() == [first], "the refusal was reported more than once"
    assert metric(controller, "dihera_reconcile_errors_total") == errors == 0, "a refusal went to the retry queue"
    assert 1 <= passes <= 6, f"{passes} reconciles for 3 prods: a retry loop?"
