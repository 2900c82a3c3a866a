"""Peers before main, for real: a replica whose lower rank's name does not resolve yet waits (bounded).

Each job is rendered by dihera (the `dihera-wait-peers` init container from the project's image built
here, never pulled) and its objects created as the controller would; Argo's workflow-controller runs it
on the real node, where CoreDNS serves the headless Service's names. Rank 0 is held unschedulable by a
node label no node has; rank 1 then waits in its init container. Adding that label to the real node
(removed again afterwards) lets rank 0 start: rank 1's name check passes and its main starts.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from ci.devcluster import realnode
from ci.devcluster.images import DIHERA_IMAGE, PYTHON_IMAGE, package_version
from ci.devcluster.settings import Settings
from dihera import RenderSettings, load_job, render
from dihera.constants import ANNOTATION_PEER_WAIT_TIMEOUT, LABEL_POD, PEER_WAIT_CONTAINER
from dihera.naming import fqdn
from tests.integration.conftest import Poll
from tests.integration.realjobs import executor_account

pytestmark = [pytest.mark.cluster, pytest.mark.realnode]

HOLD_LABEL = "dihera.io/peer-wait-test"
#: How long the test watches rank 1 wait before it lets rank 0 start.
HOLD = 8.0


def settings() -> RenderSettings:
    image = f"{DIHERA_IMAGE}:{package_version(Settings.from_environ())}"
    return RenderSettings(peer_wait_image=image, peer_wait_image_pull_policy="Never")


def replica(name: str, account: str, node_selector: dict[str, str]) -> dict[str, Any]:
    script = "import os; print('main of rank', os.environ['DI_RANK'], 'started')"
    container = {
        "name": "main",
        "image": PYTHON_IMAGE,
        "imagePullPolicy": "Never",
        "command": ["python3", "-c", script],
    }
    spec = {
        "containers": [container],
        "serviceAccountName": account,
        "terminationGracePeriodSeconds": 1,
        "nodeSelector": {**dict([realnode.NODE_LABEL]), **node_selector},
        "tolerations": [{**realnode.NODE_TAINT, "operator": "Equal"}],
    }
    return {"type": "none", "name": name, "replicas": 1, "template": {"spec": spec}}


def start_job(api: client.ApiClient, namespace: str, name: str, hold: str, timeout: int) -> None:
    """Rank 0 (task `first`) selects the label HOLD_LABEL=hold as well; rank 1 (`second`) only the real node."""
    account = executor_account(api, namespace)
    manifest = {
        "apiVersion": "diengine.opendilab.org/v2alpha1",
        "kind": "DIJob",
        "metadata": {"name": name, "annotations": {ANNOTATION_PEER_WAIT_TIMEOUT: str(timeout)}},
        "spec": {
            "backoffLimit": 0,
            "cleanPodPolicy": "None",
            "tasks": [replica("first", account, {HOLD_LABEL: hold}), replica("second", account, {})],
        },
    }
    rendered = render(load_job(manifest, namespace=namespace), settings())
    core = client.CoreV1Api(api)
    core.create_namespaced_config_map(namespace, rendered.configmap)
    core.create_namespaced_service(namespace, rendered.service)
    client.CustomObjectsApi(api).create_namespaced_custom_object(
        "argoproj.io", "v1alpha1", namespace, "workflows", rendered.workflow
    )


def pod_of(core: client.CoreV1Api, namespace: str, job: str, task: str) -> client.V1Pod | None:
    pods = core.list_namespaced_pod(namespace, label_selector=f"{LABEL_POD}={job}-{task}-0").items
    return pods[0] if pods else None


def status_of(statuses: list[client.V1ContainerStatus] | None, name: str) -> client.V1ContainerStatus:
    return next(s for s in statuses or [] if s.name == name)


def main_started(pod: client.V1Pod) -> bool:
    state = status_of(pod.status.container_statuses, "main").state
    return bool(state.running or (state.terminated and state.terminated.started_at))


def waiting_in_init(core: client.CoreV1Api, namespace: str, job: str) -> client.V1Pod | None:
    """Rank 1's pod once its dihera-wait-peers container runs."""
    pod = pod_of(core, namespace, job, "second")
    if pod is None or not pod.status.init_container_statuses:
        return None
    return pod if status_of(pod.status.init_container_statuses, PEER_WAIT_CONTAINER).state.running else None


@pytest.fixture
def hold_label(cluster: client.ApiClient) -> Iterator[str]:
    """A value of HOLD_LABEL no node has; the real node's labels are restored afterwards."""
    core = client.CoreV1Api(cluster)
    assert HOLD_LABEL not in (core.read_node(realnode.NODE_NAME).metadata.labels or {})
    try:
        yield uuid.uuid4().hex[:8]
    finally:
        core.patch_node(realnode.NODE_NAME, {"metadata": {"labels": {HOLD_LABEL: None}}})


def test_a_replica_waits_for_a_lower_ranks_name_then_starts_its_main(
    cluster: client.ApiClient, namespace: str, poll: Poll, hold_label: str
) -> None:
    core = client.CoreV1Api(cluster)
    start_job(cluster, namespace, "peers", hold_label, timeout=180)
    rank0 = fqdn("peers", namespace, "first", 0, "cluster.local")
    waiting = poll(lambda: waiting_in_init(core, namespace, "peers"), 120, "rank 1's dihera-wait-peers to run")
    time.sleep(HOLD)  # rank 0 has no node, so no address and no name: rank 1 keeps waiting
    first = pod_of(core, namespace, "peers", "first")
    assert first is not None and first.spec.node_name is None and first.status.phase == "Pending"
    second = core.read_namespaced_pod(waiting.metadata.name, namespace)
    assert status_of(second.status.init_container_statuses, PEER_WAIT_CONTAINER).state.running
    assert not main_started(second)
    log = core.read_namespaced_pod_log(second.metadata.name, namespace, container=PEER_WAIT_CONTAINER)
    assert "dihera wait-peers: rank 1 waits (up to 180 s, " in log
    assert f"for 1 of 2 names: rank 0 {rank0} (" in log

    core.patch_node(realnode.NODE_NAME, {"metadata": {"labels": {HOLD_LABEL: hold_label}}})  # rank 0 may start
    pods = poll(lambda: _both_done(core, namespace), 180, "both replicas to finish")
    for pod in pods:
        main_log = core.read_namespaced_pod_log(pod.metadata.name, namespace, container="main")
        assert pod.status.phase == "Succeeded", (pod.metadata.name, pod.status)
        assert f"main of rank {pod.metadata.annotations['diengine/rank']} started" in main_log
    second = pods[1]
    wait = status_of(second.status.init_container_statuses, PEER_WAIT_CONTAINER).state.terminated
    assert wait.exit_code == 0
    log = core.read_namespaced_pod_log(second.metadata.name, namespace, container=PEER_WAIT_CONTAINER)
    last = log.strip().splitlines()[-1]
    assert last.startswith("dihera wait-peers: rank 1: its own and every lower rank's name resolve ("), log
    assert float(last.rsplit("(", 1)[1].split(" s)")[0]) >= HOLD  # it waited the whole hold, then passed
    own = core.read_namespaced_pod_log(pods[0].metadata.name, namespace, container=PEER_WAIT_CONTAINER)
    assert own.strip().splitlines()[-1].startswith("dihera wait-peers: rank 0: its own and every lower rank's"), own
    print(f"\n[peer-wait] rank 0 (its own name only): {own.strip().splitlines()[-1]}")
    print(f"[peer-wait] rank 1 waited {last.rsplit('(', 1)[1].rstrip(')')} for rank 0's name, then started its main")


def _both_done(core: client.CoreV1Api, namespace: str) -> list[client.V1Pod] | None:
    pods = [pod_of(core, namespace, "peers", t) for t in ("first", "second")]
    done = [p for p in pods if p is not None and p.status.phase in ("Succeeded", "Failed")]
    return done if len(done) == 2 else None


def test_the_wait_is_bounded_and_names_the_host_that_did_not_resolve(
    cluster: client.ApiClient, namespace: str, poll: Poll, hold_label: str
) -> None:
    core = client.CoreV1Api(cluster)
    start_job(cluster, namespace, "bound", hold_label, timeout=3)  # the label is never added: rank 0 never starts
    rank0 = fqdn("bound", namespace, "first", 0, "cluster.local")

    def failed() -> client.V1Pod | None:
        pod = pod_of(core, namespace, "bound", "second")
        return pod if pod is not None and pod.status.phase == "Failed" else None

    second = poll(failed, 120, "rank 1's pod to fail")
    wait = status_of(second.status.init_container_statuses, PEER_WAIT_CONTAINER).state.terminated
    assert wait.exit_code == 1, wait
    assert f"dihera wait-peers: rank 1: after 3 s, 1 name(s) still do not resolve: rank 0 {rank0} (" in wait.message
    assert not main_started(second)  # the replica's main never ran
    first = pod_of(core, namespace, "bound", "first")
    assert first is not None and first.status.phase == "Pending"
    print(f"\n[peer-wait] termination message: {wait.message.strip().splitlines()[-1]}")
