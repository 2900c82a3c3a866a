"""The local control plane's real node: kubelet + containerd running real containers.

Pods here tolerate the real node's taint and select its label; they run the Debian + Python image
built by ci/devcluster/images.py (imported into containerd, never pulled).
"""

from __future__ import annotations

import importlib.metadata
import ipaddress
import json
import subprocess
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from ci.devcluster import nodehost, realnode
from ci.devcluster.images import DIHERA_IMAGE, PYTHON_IMAGE, package_version
from ci.devcluster.settings import Settings
from tests.chart.helm import CHART
from tests.integration.conftest import Poll

pytestmark = [pytest.mark.cluster, pytest.mark.realnode]

PORT = 7000


def real_pod(name: str, script: str, **spec: Any) -> dict[str, Any]:
    """A pod on the real node running `script` with the image's python3."""
    container = {
        "name": "main",
        "image": PYTHON_IMAGE,
        "imagePullPolicy": "Never",
        "command": ["python3", "-u", "-c", textwrap.dedent(script)],
        **spec.pop("container", {}),
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 1,
            "nodeSelector": dict([realnode.NODE_LABEL]),
            "tolerations": [{**realnode.NODE_TAINT, "operator": "Equal"}],
            "containers": [container],
            **spec,
        },
    }


def phase(core: client.CoreV1Api, name: str, namespace: str) -> str:
    return str(core.read_namespaced_pod(name, namespace).status.phase)


def finished(core: client.CoreV1Api, name: str, namespace: str, poll: Poll) -> client.V1Pod:
    def done() -> client.V1Pod | None:
        pod = core.read_namespaced_pod(name, namespace)
        return pod if pod.status.phase in ("Succeeded", "Failed") else None

    pod: client.V1Pod = poll(done, 120, f"pod {namespace}/{name} to finish")
    return pod


def test_node_is_ready_with_containerd(cluster: client.ApiClient) -> None:
    node = client.CoreV1Api(cluster).read_node(realnode.NODE_NAME)
    assert node.status.node_info.container_runtime_version.startswith("containerd://")
    assert node.status.node_info.kubelet_version.startswith("v1.35.")
    ready = [c for c in node.status.conditions if c.type == "Ready"]
    assert ready and ready[0].status == "True", ready
    assert node.metadata.labels[realnode.NODE_LABEL[0]] == realnode.NODE_LABEL[1]
    taints = [(t.key, t.value, t.effect) for t in node.spec.taints or []]
    assert (realnode.NODE_TAINT["key"], "true", "NoSchedule") in taints


def test_the_kubelet_never_deletes_an_image_it_cannot_pull_again(cluster: client.ApiClient) -> None:
    """The running kubelet's own configuration (``/configz``, through the API server): image GC off and no disk
    eviction, whose reclaim deletes unused images (ci/devcluster/realnode.py ``kubelet_config`` says why)."""
    core = client.CoreV1Api(cluster)
    answer = core.connect_get_node_proxy_with_path(realnode.NODE_NAME, "configz", _preload_content=False)
    config = json.loads(answer.data)["kubeletconfig"]
    assert config["imageGCHighThresholdPercent"] == 100, config
    hard = config["evictionHard"]
    assert (hard.get("nodefs.available"), hard.get("imagefs.available")) == ("0%", "0%"), hard


def test_node_network_has_no_route_out() -> None:
    """Every route of the node's namespace stays inside it: the pod bridge and its own addresses."""
    routes = subprocess.run(
        ["ip", "-n", realnode.NETNS, "-4", "route", "show", "table", "all"],
        capture_output=True, text=True, check=True,
    ).stdout.splitlines()  # fmt: skip
    allowed = [ipaddress.ip_network(n) for n in (realnode.NODE_SUBNET, "127.0.0.0/8", "10.96.0.0/24")]
    for route in routes:
        words = route.split()
        dest = words[1] if words[0] in ("local", "broadcast") else words[0]
        assert dest != "default", route
        net = ipaddress.ip_network(dest, strict=False)
        assert any(net.subnet_of(a) for a in allowed), f"route leaves the node's namespace: {route}"


def test_pod_runs_a_real_command(cluster: client.ApiClient, namespace: str, poll: Poll) -> None:
    core = client.CoreV1Api(cluster)
    script = """
        import os, socket
        print("hello from", socket.gethostname(), "uid", os.getuid())
    """
    core.create_namespaced_pod(namespace, real_pod("hello", script))
    pod = finished(core, "hello", namespace, poll)
    assert pod.status.phase == "Succeeded", pod.status
    assert pod.spec.node_name == realnode.NODE_NAME
    assert ipaddress.ip_address(pod.status.pod_ip) in ipaddress.ip_network(realnode.POD_SUBNET)
    log = core.read_namespaced_pod_log("hello", namespace)  # API server -> kubelet -> containerd
    assert log == "hello from hello uid 0\n"


def test_pod_resolves_and_connects_to_a_peer_by_fqdn(cluster: client.ApiClient, namespace: str, poll: Poll) -> None:
    core = client.CoreV1Api(cluster)
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "peers"},
        "spec": {
            "clusterIP": "None",
            "selector": {"role": "peer"},
            "publishNotReadyAddresses": True,
            "ports": [{"port": PORT}],
        },
    }
    core.create_namespaced_service(namespace, service)
    server = f"""
        import socket
        s = socket.create_server(("0.0.0.0", {PORT}))
        conn, _ = s.accept()
        conn.sendall(b"pong:" + conn.recv(64))
        conn.close()
    """
    pod = real_pod("server", server, hostname="server", subdomain="peers")
    pod["metadata"]["labels"]["role"] = "peer"
    core.create_namespaced_pod(namespace, pod)
    fqdn = f"server.peers.{namespace}.svc.cluster.local"
    client_script = f"""
        import socket, time
        for _ in range(120):  # the name exists once the server pod has an address
            try:
                address = socket.gethostbyname("{fqdn}")
                conn = socket.create_connection((address, {PORT}), timeout=5)
                break
            except OSError:
                time.sleep(0.5)
        conn.sendall(b"ping")
        print(address, conn.recv(64).decode())
    """
    core.create_namespaced_pod(namespace, real_pod("client", client_script))
    done = finished(core, "client", namespace, poll)
    assert done.status.phase == "Succeeded", core.read_namespaced_pod_log("client", namespace)
    server_ip = core.read_namespaced_pod("server", namespace).status.pod_ip
    assert core.read_namespaced_pod_log("client", namespace) == f"{server_ip} pong:ping\n"


def test_memory_limit_is_enforced(cluster: client.ApiClient, namespace: str, poll: Poll) -> None:
    core = client.CoreV1Api(cluster)
    script = """
        chunks = []
        for _ in range(64):
            chunks.append(bytearray(8 << 20))  # 512 MiB in all, far over the limit
        print("not killed")
    """
    limits = {"resources": {"limits": {"memory": "48Mi", "cpu": "500m"}}}
    core.create_namespaced_pod(namespace, real_pod("hog", script, container=limits))
    pod = finished(core, "hog", namespace, poll)
    assert pod.status.phase == "Failed"

    def ended() -> tuple[str, int]:
        terminated = core.read_namespaced_pod("hog", namespace).status.container_statuses[0].state.terminated
        return (terminated.reason, terminated.exit_code)

    # containerd takes the reason from the cgroup's OOM event, and when it handles that event after the exit the
    # kubelet may keep the first report, ("Error", 137): seen once with the CPU shared by another test session
    # (2026-12-01). Either way the kernel SIGKILLed the process (137) before it printed: the limit held.
    deadline = time.monotonic() + 20
    while ended() != ("OOMKilled", 137) and time.monotonic() < deadline:
        time.sleep(1)
    assert ended() in (("OOMKilled", 137), ("Error", 137)), ended()
    assert "not killed" not in (core.read_namespaced_pod_log("hog", namespace) or "")


def test_project_image_runs_as_non_root_with_the_charts_security_context(
    cluster: client.ApiClient, namespace: str, poll: Poll
) -> None:
    """The image built from the Dockerfile: `dihera --version` is the package's, as uid 65532, read-only root."""
    core = client.CoreV1Api(cluster)
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    container = {
        "image": f"{DIHERA_IMAGE}:{package_version(Settings.from_environ())}",
        "command": ["/bin/sh", "-c", "dihera --version && id -u && ! touch /opt/dihera/x 2>/dev/null"],
        "securityContext": values["securityContext"],
    }
    pod = real_pod("version", "", container=container)
    pod["spec"]["securityContext"] = values["podSecurityContext"]
    core.create_namespaced_pod(namespace, pod)
    done = finished(core, "version", namespace, poll)
    log = core.read_namespaced_pod_log("version", namespace)
    assert done.status.phase == "Succeeded", log
    assert log == f"dihera {importlib.metadata.version('dihera')}\n65532\n"


def test_a_second_cluster_cannot_take_the_real_node(cluster: client.ApiClient, tmp_path: Path) -> None:
    """One real node per machine: a cluster in another state directory is refused, naming the owner."""
    owner = nodehost.owner()
    assert owner is not None
    with pytest.raises(nodehost.NodeBusy, match=f"belongs to the cluster in {owner}"):
        nodehost.claim(tmp_path / ".devcluster")
    assert nodehost.owner() == owner
