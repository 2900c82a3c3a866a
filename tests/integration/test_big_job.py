"""A large job end to end on kwok: 1 learner + N collectors + 1 evaluator reaches Running with a correct
status, scales to N + step and to N - step by a hand edit, and no survivor is touched (pod UIDs, ranks).

N is 100 (step 50) in the default run and 2,000 (step 100) with ``DIHERA_BIG_JOB_COLLECTORS=2000``
(``make test-big``; the figures are in docs/scaling.md). The kwok nodes get room for the job first
(tests/integration/kwok_capacity.py). The controller runs as in test_controller_jobs.py.

The job's name is the longest the hostname rule allows beside ``collector-2099`` (48 characters): at
full size the 2,102 long bare hostnames would not fit in one environment string, so the collectors that
join past what fits get short hostnames ``collector-<index>`` (docs/rendering.md, "Names in the node
lists"); every pod's hostname is checked against its replica's.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from dihera.env_limits import value_fits
from dihera.kube.jobs import JobStore
from dihera.membership import Membership
from dihera.scaling import read_dag
from tests.integration.conftest import Poll
from tests.integration.controllers import Controller
from tests.integration.jobs import edit_replicas, manifest, task
from tests.integration.kwok_capacity import kwok_capacity

pytestmark = pytest.mark.cluster
COLLECTORS = int(os.environ.get("DIHERA_BIG_JOB_COLLECTORS", "100"))
STEP = min(100, COLLECTORS // 2)  # 2,000 -> 2,100 -> 1,900; 100 -> 150 -> 50
#: 48 characters: the longest the hostname rule allows beside "collector-2099"; past 46, DI_NODES of 2,102
#: replicas as long bare hostnames is over Linux's limit (docs/rendering.md, "Names in the node lists").
NAME = "big-job-of-two-thousand-collectors-on-kwok-wxyz0"
POLL_SECONDS = 3.0  # a LIST of 2,000 pods is ~10 MB: poll gently


@pytest.fixture
def big_controller(
    controller_kubeconfig: Path,
    dijob_crd: None,
    namespace: str,
    tmp_path: Path,
) -> Iterator[Controller]:
    """The ``controller`` fixture's controller (conftest.py), given time to stop while it watches thousands of pods."""
    ctl = Controller(controller_kubeconfig, namespace, tmp_path / "controller.log")
    ctl.start()
    try:
        yield ctl
    finally:
        assert ctl.proc is not None
        ctl.proc.send_signal(signal.SIGTERM)
        try:
            ctl.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            ctl.proc.kill()
            ctl.proc.wait()
        print(ctl.logs()[-6000:])  # shown by pytest when the test failed


def pod_table(api: client.ApiClient, namespace: str) -> dict[str, tuple[str, str, str, str]]:
    """The job's live pods: ``diengine/pod`` -> (uid, rank annotation, phase, pod hostname); raw JSON (fast
    for thousands)."""
    resp = client.CoreV1Api(api).list_namespaced_pod(
        namespace, label_selector=f"diengine/job={NAME}", _preload_content=False
    )
    table = {}
    for pod in json.loads(resp.data)["items"]:
        meta = pod["metadata"]
        if not meta.get("deletionTimestamp"):
            table[meta["labels"]["diengine/pod"]] = (
                meta["uid"],
                meta["annotations"]["diengine/rank"],
                pod["status"].get("phase", ""),
                pod["spec"].get("hostname", ""),
            )
    return table


def hosts(collectors: range) -> set[str]:
    return {f"{NAME}-learner-0", f"{NAME}-evaluator-0", *(f"{NAME}-collector-{i}" for i in collectors)}


def settled(
    api: client.ApiClient, jobs: JobStore, namespace: str, want: set[str], reschedules: int
) -> tuple[dict[str, tuple[str, str, str, str]], dict[str, Any]] | None:
    """Exactly ``want`` live and Running, and the DIJob's status saying so."""
    pods = pod_table(api, namespace)
    if set(pods) != want or any(phase != "Running" for _, _, phase, _ in pods.values()):
        return None
    status = dict(((jobs.get(namespace, NAME) or {}).get("status")) or {})
    ok = (status.get("phase"), status.get("replicas"), status.get("reschedules")) == ("Running", len(want), reschedules)
    return (pods, status) if ok else None


def check_membership(
    api: client.ApiClient, namespace: str, want: set[str], generation: int, pods: dict[str, tuple[str, str, str, str]]
) -> Membership:
    """The ConfigMap names exactly the live replicas, each value an environment string Linux execs, each
    replica by its pod's hostname."""
    cm = client.CoreV1Api(api).read_namespaced_config_map(f"di-{NAME}", namespace).data
    assert all(value_fits(v) for v in cm.values()), {k: len(v) for k, v in cm.items()}
    members = Membership.from_json(cm["membership.json"])
    assert members.generation == generation
    assert {f"{NAME}-{r.task}-{r.index}" for r in members.replicas} == want
    nodes = cm["DI_NODES"].split(",")
    for r in members.replicas:
        assert nodes[r.rank].split(".")[0] == r.hostname(NAME) == pods[f"{NAME}-{r.task}-{r.index}"][3]
    short = sum(1 for r in members.replicas if r.short)
    print(
        f"[big job] ConfigMap {sum(len(v) for v in cm.values())} bytes, DI_NODES {len(cm['DI_NODES'])} bytes, "
        f"{short} short hostnames"
    )
    return members


def workflow(api: client.ApiClient, namespace: str) -> dict[str, Any]:
    wf: dict[str, Any] = client.CustomObjectsApi(api).get_namespaced_custom_object(
        "argoproj.io", "v1alpha1", namespace, "workflows", NAME
    )
    return wf


def test_a_large_job_runs_and_scales_up_and_down_keeping_every_survivor(
    big_controller: Controller,
    cluster: client.ApiClient,
    namespace: str,
    poll: Poll,
) -> None:
    n, jobs = COLLECTORS, JobStore(cluster)
    templates = [task("learner"), task("collector", n), task("evaluator")]
    for t in templates:
        t["template"]["metadata"]["annotations"]["sim.dihera.io/run-seconds"] = "3600"
    with kwok_capacity(cluster, n + STEP + 2):
        start = time.monotonic()
        jobs.create(manifest(NAME, namespace, *templates, maxReplicas=n + STEP + 2))
        want = hosts(range(n))
        first, status = poll(
            lambda: settled(cluster, jobs, namespace, want, 0), 120 + n * 0.6, "all Running", POLL_SECONDS
        )
        print(
            f"[big job] 1 + {n} + 1 replicas: apply -> all Running and status Running {time.monotonic() - start:.1f}s"
        )
        assert status["taskStatus"] == {
            "learner": {"Running": 1},
            "collector": {"Running": n},
            "evaluator": {"Running": 1},
        }
        assert status["restarts"] == 0 and status["membershipGeneration"] == 1
        assert sorted(int(rank) for _, rank, _, _ in first.values()) == list(range(n + 2))
        assert not any(r.short for r in check_membership(cluster, namespace, want, 1, first).replicas)
        wf = workflow(cluster, namespace)
        nodes, packed = wf["status"].get("nodes") or {}, wf["status"].get("compressedNodes") or ""
        print(
            f"[big job] Workflow {len(json.dumps(wf))} bytes: {len(nodes)} nodes, compressedNodes {len(packed)} bytes"
        )

        # n -> n + 100: the new collectors take the next indices and ranks; nobody else moves
        start = time.monotonic()
        edit_replicas(cluster, namespace, NAME, collector=n + STEP)
        want = hosts(range(n + STEP))
        grown, status = poll(
            lambda: settled(cluster, jobs, namespace, want, 1), 120 + n * 0.15, "scaled up", POLL_SECONDS
        )
        print(f"[big job] +{STEP}: edit -> all Running and status Running {time.monotonic() - start:.1f}s")
        assert {h: grown[h][:2] for h in first} == {h: v[:2] for h, v in first.items()}, "a survivor moved"
        assert status["taskStatus"]["collector"] == {"Running": n + STEP}
        members = check_membership(cluster, namespace, want, 2, grown)
        if n >= 2000:  # 2,102 long bare hostnames do not fit: the last collectors to join have short ones
            assert any(r.short for r in members.replicas)

        # n + 100 -> n - 100: the 200 highest-ranked collectors go; the rest keep pod and rank
        start = time.monotonic()
        edit_replicas(cluster, namespace, NAME, collector=n - STEP)
        want = hosts(range(n - STEP))
        shrunk, status = poll(
            lambda: settled(cluster, jobs, namespace, want, 2), 120 + n * 0.15, "scaled down", POLL_SECONDS
        )
        print(f"[big job] -{2 * STEP}: edit -> survivors only, status Running {time.monotonic() - start:.1f}s")
        assert {h: shrunk[h][:2] for h in want} == {h: grown[h][:2] for h in want}, "a survivor moved"
        assert status["taskStatus"]["collector"] == {"Running": n - STEP} and status["restarts"] == 0
        check_membership(cluster, namespace, want, 3, shrunk)
        retired = read_dag(workflow(cluster, namespace)).retired
        assert sorted(retired) == sorted(f"collector-{i}" for i in range(n - STEP, n + STEP))
        jobs.delete(namespace, NAME)
