"""The Argo UI of the local control plane (argo server, ci/tools/argo/v4/server): loopback only, and a
DIJob read in a real browser (tests/integration/argo_ui.py) while it runs and after it is scaled up.

The DIJob runs on kwok's simulated nodes (render + create, as in test_server_scaling.py), scaled through
the di-server's API; screenshots go to .devcluster/screenshots/ (kept by `make cluster-down`).
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from kubernetes import client

from ci.devcluster import Cluster, Settings
from dihera.constants import ANNOTATION_WORKFLOW_TITLE
from tests.integration.argo_ui import browser_page, expect_text, screenshot
from tests.integration.test_server_scaling import (  # noqa: F401  (fixtures)
    running,
    sa_token,
    server,
    server_kubeconfig,
    start_job,
    workflow,
)

pytestmark = pytest.mark.cluster
NAME = "uijob"


@pytest.fixture(scope="session")
def argo_ui(kubeconfig: Path) -> str:
    """The Argo UI's URL on the local control plane (skips on $KUBECONFIG's cluster or a pair without it)."""
    dev = Cluster(Settings.from_environ())
    url = dev.argo_ui_url()
    if kubeconfig.resolve() != dev.kubeconfig.resolve() or url is None:
        pytest.skip("argo server runs on the local control plane of a pair with a loopback argo server main (v4)")
    assert dev.state.argo_ui_url.read_text().strip() == url, "cluster-up writes the URL to .devcluster/argo-ui-url"
    return url


@pytest.fixture(scope="session")
def screenshots() -> Path:
    return Cluster(Settings.from_environ()).state.screenshots


def get(url: str) -> tuple[int, str, str]:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return resp.status, resp.headers.get("Content-Type", ""), resp.read().decode()


# -- loopback only -------------------------------------------------------------------------------------


def host_addresses() -> list[tuple[str, str]]:
    """Every address of this host's interfaces but loopback's, as (address, interface), from `ip -j addr`."""
    links = json.loads(subprocess.run(["ip", "-j", "addr"], capture_output=True, text=True, check=True).stdout)
    return [
        (a["local"], link["ifname"])
        for link in links
        for a in link.get("addr_info", [])
        if a.get("scope") != "host" and a["family"] in ("inet", "inet6")
    ]


def connect(address: str, interface: str, port: int) -> str:
    """Try a TCP connection to this host's own ``address``; what happened ("refused" or "connected")."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    where: tuple[Any, ...] = (address, port) if family == socket.AF_INET else (address, port, 0, 0)
    if address.startswith("fe80:"):
        where = (address, port, 0, socket.if_nametoindex(interface))
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.settimeout(5)
        try:
            sock.connect(where)
        except ConnectionRefusedError:
            return "refused"
    return "connected"


def listeners(port: int) -> set[str]:
    """Local addresses (hex, as /proc/net/tcp{,6} writes them) of the sockets listening on ``port``."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.split(":")
            if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                found.add(address)
    return found


def test_the_ui_answers_on_loopback_and_on_no_other_host_address(argo_ui: str, namespace: str) -> None:
    port = int(argo_ui.rsplit(":", 1)[1])
    status, kind, html = get(f"{argo_ui}/")
    assert status == 200 and kind.startswith("text/html") and "<title>Argo</title>" in html, html[:500]
    status, _, body = get(f"{argo_ui}/api/v1/version")
    # linked with the version ("+unknown": built from the module, not from a tagged git checkout)
    assert json.loads(body)["version"].split("+")[0] == Settings.from_environ().argo_version, body
    status, _, body = get(f"{argo_ui}/api/v1/workflows/{namespace}")
    assert status == 200 and json.loads(body).get("items") in (None, []), body  # a fresh namespace: no Workflow

    assert listeners(port) == {"0100007F"}, "argo server must listen on 127.0.0.1 only"
    others = host_addresses()
    assert others, "no non-loopback address on this host to try"
    outcomes = {f"{address}%{interface}": connect(address, interface, port) for address, interface in others}
    assert set(outcomes.values()) == {"refused"}, outcomes


# -- a DIJob in the browser --------------------------------------------------------------------------


def replica_nodes(api: client.ApiClient, namespace: str, count: int) -> list[str] | None:
    """The Workflow's nodes of the job's replicas by display name (``<task>-<index>``), once there are ``count``."""
    nodes = (workflow(api, namespace, NAME).get("status") or {}).get("nodes") or {}
    # a replica's pod node is "<task>-<index>(<attempt>)" under its retry node "<task>-<index>"
    names = sorted({n["displayName"].split("(")[0] for n in nodes.values() if n.get("type") == "Pod"})
    return names if len(names) == count else None


def list_page_texts(wf: dict[str, Any]) -> list[str]:
    """What the workflow list must show for the job's Workflow (add the custom columns' values here)."""
    return [wf["metadata"]["annotations"][ANNOTATION_WORKFLOW_TITLE]]


def workflow_page_texts(wf: dict[str, Any], replicas: list[str]) -> list[str]:
    """What the Workflow's page must show: its name and every replica's node (add links here)."""
    return [wf["metadata"]["name"], *replicas]


@pytest.fixture
def scaler(cluster: client.ApiClient, namespace: str, server: str) -> Iterator[httpx.Client]:  # noqa: F811
    token = sa_token(cluster, namespace, "scaler", ["get", "patch"])
    with httpx.Client(base_url=server, headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
        yield http


def test_a_running_dijob_reads_in_the_argo_ui_and_a_scaled_replica_appears(
    argo_ui: str, screenshots: Path, dijob_crd: None, cluster: client.ApiClient, namespace: str,
    scaler: httpx.Client, poll: Any,
) -> None:  # fmt: skip
    start_job(cluster, namespace, NAME, collectors=2, maxReplicas=8)
    hosts = {f"{NAME}-learner-0", f"{NAME}-collector-0", f"{NAME}-collector-1"}
    poll(lambda: running(cluster, namespace, NAME, hosts), 60, "3 pods Running")
    replicas = poll(lambda: replica_nodes(cluster, namespace, 3), 60, "3 replica nodes")
    assert replicas == ["collector-0", "collector-1", "learner-0"]
    wf = workflow(cluster, namespace, NAME)

    with browser_page() as page:
        page.goto(f"{argo_ui}/workflows/{namespace}")
        expect_text(page, list_page_texts(wf), "the workflow list")
        screenshot(page, screenshots, "workflow-list")

        page.goto(f"{argo_ui}/workflows/{namespace}/{NAME}")
        expect_text(page, workflow_page_texts(wf, replicas), "the Workflow's page")
        screenshot(page, screenshots, "workflow-graph")

        up = scaler.put(f"/v1/namespaces/{namespace}/dijobs/{NAME}/tasks/collector/replicas", json={"replicas": 3})
        assert up.status_code == 200, up.text
        poll(lambda: running(cluster, namespace, NAME, hosts | {f"{NAME}-collector-2"}), 60, "4 pods Running")
        grown = poll(lambda: replica_nodes(cluster, namespace, 4), 60, "4 replica nodes")
        assert grown == ["collector-0", "collector-1", "collector-2", "learner-0"]
        text = expect_text(page, ["collector-2"], "the page after a scale-up")
        screenshot(page, screenshots, "workflow-graph-scaled")
    # past three siblings the graph folds the middle ones into one "N hidden nodes" node: every replica is
    # either shown by name or counted there
    shown = [r for r in grown if r in text.splitlines()]
    folded = re.search(r"^(\d+) hidden nodes$", text, re.MULTILINE)
    assert len(shown) + (int(folded.group(1)) if folded else 0) == len(grown), (shown, text)
