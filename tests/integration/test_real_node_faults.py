"""The real node's kubelet and then its containerd SIGKILLed and started again while the project's example trains
(workflows/cartpole-dqn.yaml: a learner, an evaluator and two collectors in DI-engine's mesh, in the DI-engine
image built here), issue 42.

Containers outlive both processes (each runs under its containerd shim), so the promise is: training goes on
across the faults (the learner's iterations go up while the kubelet, then containerd, are away), the evaluator
reaches the stop value after them and the job Succeeds, and every pod is the one it started with (same uid, no
container restarted). The learner is throttled in place (realjobs.THROTTLED, as the scale test does) from its
first iteration until containerd is back, so the faults land in the middle of training rather than after it
(CartPole converges in under a minute). The time from containerd ready again to the node Ready and to the job
Succeeded is printed.

Found on the way: a kubelet that cannot reach containerd while it starts exits ("validate CRI v1 runtime API
... Unavailable"); on a real node systemd starts it again, here nobody does, so containerd is killed only once
the restarted kubelet has reported the node Ready (a heartbeat newer than its kill).

A replica's network cut for 30 s mid-training is test_real_node_di_engine.py's (a collector of DI-engine's own
DQN example, docs/reliability.md).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from ci.devcluster import Cluster, Settings, realnode
from dihera.kube.jobs import JobStore
from tests.integration.conftest import Poll
from tests.integration.controllers import Controller
from tests.integration.jobs import job_pods
from tests.integration.realjobs import (
    THROTTLED,
    UNTHROTTLED,
    cpu_limit,
    exit_codes,
    follow,
    job_logs,
    on_real_node,
    own_lines,
    resize_learner,
)

pytestmark = [pytest.mark.cluster, pytest.mark.realnode]

NAME = "cartpole-dqn"
LEARNER = f"{NAME}-learner-0"
STOP_VALUE = 195.0
#: From the faults' end to the job's: the learner unthrottled trains to the stop value in about a minute.
TIME_BOUND = 420
PROGRESS_WAIT = 180  # s for the learner's next progress line at 50m CPU (20 iterations apart)


@pytest.fixture(scope="module")
def dev(kubeconfig: Path) -> Iterator[Cluster]:
    """The local control plane, whose node processes the test kills; skipped on another cluster."""
    cluster = Cluster(Settings.from_environ())
    if not (cluster.state.exists() and cluster.kubeconfig.resolve() == kubeconfig.resolve()):
        pytest.skip("faults are injected into the local control plane only; $KUBECONFIG names another cluster")
    yield cluster
    cluster.up()  # whatever a failed test left stopped is started again for the tests after it


def node_ready(core: client.CoreV1Api, since: datetime) -> bool:
    """The node Ready, as reported by a kubelet heartbeat after `since`."""
    node = core.read_node(realnode.NODE_NAME)
    ready = [c for c in node.status.conditions or [] if c.type == "Ready"]
    return bool(ready) and ready[0].status == "True" and ready[0].last_heartbeat_time >= since


def contract(log: str, event: str) -> list[dict[str, str]]:
    """The example's `dihera-<event> key=value ...` lines of ``log``, as dicts."""
    found = []
    for line in own_lines(log):
        if line.startswith(f"dihera-{event} "):
            found.append(dict(p.split("=", 1) for p in line.split(" ")[1:] if "=" in p))
    return found


def learner_iteration(core: client.CoreV1Api, namespace: str, pod: dict[str, Any]) -> int:
    """The learner's last iteration in its log (`dihera-progress iter=N`, every 20 and the first), -1: none."""
    try:
        log = core.read_namespaced_pod_log(pod["metadata"]["name"], namespace, container="di-container")
    except client.ApiException:
        return -1
    return max((int(x["iter"]) for x in contract(log or "", "progress") if re.fullmatch(r"\d+", x["iter"])), default=-1)


def replicas(cluster: client.ApiClient, namespace: str) -> dict[str, dict[str, Any]]:
    return {p["spec"]["hostname"]: p for p in job_pods(cluster, namespace, NAME)}


def what_ended(cluster: client.ApiClient, namespace: str, uids: set[str]) -> dict[str, Any]:
    """For a failure's message: the Events of the pods with these uids (the kubelet's reasons) and the Workflow's
    nodes that did not succeed (Argo's message for each pod it replaced)."""
    events = client.CoreV1Api(cluster).list_namespaced_event(namespace).items
    workflow = client.CustomObjectsApi(cluster).get_namespaced_custom_object(
        "argoproj.io", "v1alpha1", namespace, "workflows", NAME
    )
    nodes = (workflow.get("status") or {}).get("nodes") or {}
    return {
        "events": [
            f"{e.last_timestamp or e.event_time} {e.reason}: {e.message}"
            for e in events
            if e.involved_object.uid in uids
        ],
        "nodes": [
            f"{n.get('displayName')} {n.get('phase')}: {n.get('message')}"
            for n in nodes.values()
            if n.get("type") == "Pod" and n.get("phase") != "Succeeded"
        ],
    }


def test_kubelet_and_containerd_restarted_while_the_example_trains_restart_no_replica(
    dev: Cluster, ding_image: str, controller: Controller, cluster: client.ApiClient, namespace: str, poll: Poll
) -> None:
    core = client.CoreV1Api(cluster)
    JobStore(cluster).create(on_real_node("cartpole-dqn.yaml", namespace, ding_image, cluster))

    def training() -> dict[str, dict[str, Any]] | None:
        pods = replicas(cluster, namespace)
        return pods if LEARNER in pods and learner_iteration(core, namespace, pods[LEARNER]) >= 0 else None

    def iteration(what: str, past: int = -1) -> int:
        """The learner's newest logged iteration once it is past `past`: its lines come every 20 iterations,
        tens of seconds apart at 50m CPU, and the log is read through the kubelet (once it serves again)."""

        def newer() -> int | None:
            found = learner_iteration(core, namespace, replicas(cluster, namespace)[LEARNER])
            return found + 1 if found > past else None  # + 1: iteration 0 is an answer, not a falsy "not yet"

        return int(poll(newer, PROGRESS_WAIT, what)) - 1

    pods = poll(training, 300, "the learner's first iteration")
    started = {host: p["metadata"]["uid"] for host, p in pods.items()}
    assert len(started) == 4, sorted(started)
    resize_learner(cluster, namespace, pods[LEARNER]["metadata"]["name"], THROTTLED)
    poll(lambda: cpu_limit(replicas(cluster, namespace)[LEARNER]) == THROTTLED["limits"]["cpu"], 60,
         "the kubelet to throttle the learner")  # fmt: skip
    before = iteration("the learner's log before the faults")
    # the kubelet exits when it cannot reach the runtime as it starts (a node's systemd starts it again; here
    # nobody would): containerd is killed once the new kubelet has reported the node Ready
    killed = datetime.now(UTC)
    dev.kill("kubelet")
    time.sleep(3)
    dev.restart("kubelet")
    poll(lambda: node_ready(core, killed), 60, "the node Ready after the kubelet's restart")
    between = iteration("a learner iteration past the one before the kubelet's restart", before)
    killed = datetime.now(UTC)
    dev.kill("containerd")
    time.sleep(3)
    dev.restart("containerd")
    back = time.monotonic()
    poll(lambda: node_ready(core, killed), 60, "the node Ready after containerd's restart")
    ready_in = time.monotonic() - back
    after = iteration("a learner iteration past the one before containerd's restart", between)
    resize_learner(cluster, namespace, replicas(cluster, namespace)[LEARNER]["metadata"]["name"], UNTHROTTLED)
    run = follow(cluster, namespace, NAME, timeout=TIME_BOUND)
    succeeded_in = time.monotonic() - back

    logs = job_logs(cluster, namespace, NAME)
    assert run.status["phase"] == "Succeeded", (run.phases, run.status, {p: log[-2000:] for p, log in logs.items()})
    assert before < between < after, ("the learner did not train through the faults", before, between, after)
    pods = replicas(cluster, namespace)
    replaced = {host for host, p in pods.items() if started.get(host) != p["metadata"]["uid"]}
    assert not replaced, ("a replica got a new pod", what_ended(cluster, namespace, {started[h] for h in replaced}))
    for host, pod in pods.items():
        assert set(exit_codes(pod).values()) == {0}, (host, exit_codes(pod))
        assert all(c.get("restartCount", 0) == 0 for c in pod["status"]["containerStatuses"]), host
    evaluator = next(log for log in logs.values() if "dihera-role role=evaluator" in log)
    (reached,) = contract(evaluator, "stop-value-reached")
    assert float(reached["return"]) >= STOP_VALUE and int(reached["iter"]) > after, (reached, after)
    print(
        f"\n[faults] real node: kubelet then containerd SIGKILLed and started again while the example trained; "
        f"the learner at iteration {before} before, {between} between, {after} after the faults; node Ready "
        f"{ready_in:.1f} s and the job Succeeded {succeeded_in:.1f} s after containerd was back (stop value "
        f"{reached['return']} at iteration {reached['iter']}); no replica restarted"
    )
