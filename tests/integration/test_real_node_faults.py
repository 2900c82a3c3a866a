"""The real node's kubelet and then its containerd SIGKILLed and started again, and a replica's network cut for
CUT_SECONDS, while a DIJob runs there (issue 42).

The job: a learner serving TCP on its FQDN and two collectors dialling it every 0.5 s, for RUN_SECONDS, with
backoffLimit 0 (a restarted replica would be a failed job). Containers outlive both processes (each runs under
its containerd shim), so the promise is: the job Succeeds, every pod is the one it started with (same uid, no
container restart), and the collectors still reach the learner by its FQDN after the faults; the collector
whose network was cut (its pod's eth0 down) fails its dials meanwhile and reaches the learner again after. The time from
containerd ready again to the node Ready and to the job Succeeded is printed.

Found on the way: a kubelet that cannot reach containerd while it starts exits ("validate CRI v1 runtime API
... Unavailable"); on a real node systemd starts it again, here nobody does, so containerd is killed only once
the restarted kubelet has reported the node Ready (a heartbeat newer than its kill).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from ci.devcluster import Cluster, Settings, nodehost, realnode
from ci.devcluster.images import PYTHON_IMAGE
from dihera.kube.jobs import JobStore
from tests.integration.conftest import Poll
from tests.integration.controllers import Controller
from tests.integration.jobs import job_pods, manifest, phase_is
from tests.integration.realjobs import ON_REAL_NODE, executor_account

pytestmark = [pytest.mark.cluster, pytest.mark.realnode]

RUN_SECONDS = 75
#: How long one collector's network is cut (its eth0 down inside its pod's network namespace).
CUT_SECONDS = 20
#: Rank 0 serves; the others dial DI_NODES[0] every 0.5 s and count the dials that reached it; each process
#: prints a line every second until RUN_SECONDS after it started.
PROGRAM = f"""
import os, socket, threading, time
rank, peers = int(os.environ["DI_RANK"]), os.environ["DI_NODES"].split(",")
end, reached, served = time.monotonic() + {RUN_SECONDS}, 0, 0
if rank == 0:
    srv = socket.create_server(("", 22270))
    def serve():
        global served
        while True:
            conn, _ = srv.accept(); conn.close(); served += 1
    threading.Thread(target=serve, daemon=True).start()
last = 0.0
while time.monotonic() < end:
    if rank != 0:
        try:
            socket.create_connection((peers[0], 22270), timeout=2).close(); reached += 1
        except OSError as err:
            print("dial failed", err, flush=True)
    if time.monotonic() - last >= 1:
        print("tick", int(time.time()), "reached", reached, "served", served, flush=True); last = time.monotonic()
    time.sleep(0.5)
print("done reached", reached, "served", served, flush=True)
"""


@pytest.fixture(scope="module")
def dev(kubeconfig: Path) -> Iterator[Cluster]:
    """The local control plane, whose node processes the test kills; skipped on another cluster."""
    cluster = Cluster(Settings.from_environ())
    if not (cluster.state.exists() and cluster.kubeconfig.resolve() == kubeconfig.resolve()):
        pytest.skip("faults are injected into the local control plane only; $KUBECONFIG names another cluster")
    yield cluster
    cluster.up()  # whatever a failed test left stopped is started again for the tests after it


def task(type_: str, replicas: int, account: str) -> dict[str, Any]:
    main = {"name": "main", "image": PYTHON_IMAGE, "imagePullPolicy": "Never", "command": ["python", "-c", PROGRAM]}
    spec = {"containers": [main], "serviceAccountName": account, **ON_REAL_NODE}
    return {"type": type_, "replicas": replicas, "template": {"spec": spec}}


def poll_quietly(check: Any, timeout: float) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := check():
            return found
        time.sleep(0.5)
    return None


def node_ready(core: client.CoreV1Api, since: datetime) -> bool:
    """The node Ready, as reported by a kubelet heartbeat after `since`."""
    node = core.read_node(realnode.NODE_NAME)
    ready = [c for c in node.status.conditions or [] if c.type == "Ready"]
    return bool(ready) and ready[0].status == "True" and ready[0].last_heartbeat_time >= since


def test_kubelet_and_containerd_restarted_mid_job_restart_no_replica(
    dev: Cluster, controller: Controller, cluster: client.ApiClient, namespace: str, poll: Poll
) -> None:
    core, jobs = client.CoreV1Api(cluster), JobStore(cluster)
    account = executor_account(cluster, namespace)
    jobs.create(
        manifest("steady", namespace, task("learner", 1, account), task("collector", 2, account), backoffLimit=0)
    )

    def all_running() -> list[dict[str, Any]] | None:
        pods = job_pods(cluster, namespace, "steady")
        mains = [
            s
            for p in pods
            for s in p["status"].get("containerStatuses", [])
            if s["name"] == "main" and "running" in s["state"]
        ]
        return pods if len(pods) == 3 and len(mains) == 3 else None

    started_pods = poll(all_running, 120, "3 replicas running on the real node")
    started = {p["metadata"]["uid"] for p in started_pods}
    time.sleep(5)
    # the kubelet exits when it cannot reach the runtime as it starts (a node's systemd starts it again; here
    # nobody would): containerd is killed once the new kubelet has reported the node Ready
    killed = datetime.now(UTC)
    dev.kill("kubelet")
    time.sleep(3)
    dev.restart("kubelet")
    poll(lambda: node_ready(core, killed), 60, "the node Ready after the kubelet's restart")
    killed = datetime.now(UTC)
    dev.kill("containerd")
    time.sleep(3)
    dev.restart("containerd")
    back = time.monotonic()
    poll(lambda: node_ready(core, killed), 60, "the node Ready after containerd's restart")
    ready_in = time.monotonic() - back
    # a collector's network cut: its dials fail, then reach the learner again once the link is back
    (cut,) = [p for p in started_pods if p["metadata"]["annotations"]["diengine/rank"] == "1"]
    nodehost.pod_link(cut["metadata"]["uid"], up=False)
    time.sleep(CUT_SECONDS)
    nodehost.pod_link(cut["metadata"]["uid"], up=True)
    if not poll_quietly(phase_is(jobs, namespace, "steady", "Succeeded"), RUN_SECONDS + 90):
        states = {
            p["metadata"]["name"]: (
                p["status"].get("phase"),
                [(c["type"], c["status"]) for c in p["status"].get("conditions", [])],
                [(c["name"], c["state"], c.get("ready")) for c in p["status"].get("containerStatuses", [])],
            )
            for p in job_pods(cluster, namespace, "steady")
        }
        status = (jobs.get(namespace, "steady") or {}).get("status", {})
        pytest.fail(f"the job did not Succeed: {status.get('phase')} {status.get('conditions')}\npods: {states}")
    succeeded_in = time.monotonic() - back

    pods = job_pods(cluster, namespace, "steady")
    assert {p["metadata"]["uid"] for p in pods} == started, "a replica got a new pod"
    for pod in pods:
        main = next(s for s in pod["status"]["containerStatuses"] if s["name"] == "main")
        assert main["restartCount"] == 0 and main["state"]["terminated"]["exitCode"] == 0, main
    logs = {
        p["metadata"]["annotations"]["diengine/rank"]: core.read_namespaced_pod_log(
            p["metadata"]["name"], namespace, container="main"
        )
        for p in pods
    }
    done = {rank: [line for line in log.splitlines() if line.startswith("done ")][-1:] for rank, log in logs.items()}
    # the cut collector: its dials failed during the cut (a name lookup with no network takes seconds to fail)
    # and reached the learner again after it; it reached it about two a second fewer times than the other
    lines = logs["1"].splitlines()
    ticks = [(i, int(line.split()[3])) for i, line in enumerate(lines) if line.startswith("tick ")]

    def recovered(i: int) -> bool:  # a later tick reached the learner more often than the last one before
        before = max((r for j, r in ticks if j < i), default=0)
        return any(r > before for j, r in ticks if j > i)

    # a dial refused as the learner has just ended (the job's last second) is not the cut: left out
    failed = [i for i, line in enumerate(lines) if line.startswith("dial failed") and recovered(i)]
    after = [r for j, r in ticks if j > failed[-1]] if failed else []
    assert failed and after and after[-1] - after[0] >= 10, logs["1"][-3000:]
    for rank in ("1", "2"):  # dials reached the learner throughout: two a second but for the cut
        assert done[rank] and int(done[rank][0].split()[2]) >= RUN_SECONDS, (done, logs[rank][-2000:])
    reached = {rank: int(line[0].split()[2]) for rank, line in done.items() if line}
    assert reached["1"] <= reached["2"] - CUT_SECONDS, reached  # the cut was a cut
    print(
        f"\n[faults] real node: kubelet then containerd SIGKILLed and started again mid-job; node Ready "
        f"{ready_in:.1f} s and the job Succeeded {succeeded_in:.1f} s after containerd was back; no replica "
        f"restarted; collector rank 1 cut off {CUT_SECONDS} s: {len(failed)} dials failed, then it reached the "
        f"learner again; last lines {done}"
    )
