"""The Argo UI of the local control plane (argo server, ci/tools/argo/v4/server): loopback only, and a
DIJob read in a real browser (tests/integration/argo_ui.py) while it runs and after it is scaled up.

The DIJob runs on kwok's simulated nodes (render + create, as in test_server_scaling.py), scaled through
the API of a di-server on the port the Argo UI's links name (the ``ui_server`` fixture of conftest.py), whose
views the browser opens from the links; screenshots go to .devcluster/screenshots/ (kept by `make cluster-down`;
README.md and docs/argo-ui.md show two of them).
"""

from __future__ import annotations

import json
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
from dihera.argo_ui import UI_COLUMNS
from dihera.constants import ANNOTATION_WORKFLOW_DESCRIPTION, ANNOTATION_WORKFLOW_TITLE
from tests.integration.argo_ui import (
    ListTable,
    browser_page,
    click_graph_node,
    expect_text,
    follow_link,
    graph_labels,
    graph_node_ids,
    html_tables,
    list_table,
    screenshot,
    wait_for,
)
from tests.integration.servers import running, sa_token, start_job, ui_trust, workflow

pytestmark = [pytest.mark.cluster, pytest.mark.exclusive]
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


def pod_nodes(api: client.ApiClient, namespace: str, count: int) -> dict[str, str] | None:
    """The Workflow's Pod nodes by replica (``<task>-<index>``, its display name without the attempt
    suffix): node IDs, once there are ``count``."""
    nodes = (workflow(api, namespace, NAME).get("status") or {}).get("nodes") or {}
    found = {n["displayName"].split("(")[0]: i for i, n in nodes.items() if n.get("type") == "Pod"}
    return found if len(found) == count else None


def columns_of(wf: dict[str, Any]) -> dict[str, str]:
    """The custom columns' values the list must show for ``wf`` (Argo's ConfigMap, from dihera.argo_ui)."""
    return {name: wf["metadata"]["annotations"][key] for name, key in UI_COLUMNS}


def job_row(table: ListTable, title: str) -> list[str] | None:
    return next((row for row in table.rows if row and row[0].startswith(title)), None)


@pytest.fixture
def scaler(cluster: client.ApiClient, namespace: str, ui_server: str) -> Iterator[httpx.Client]:
    token = sa_token(cluster, namespace, "scaler", ["get", "patch"])
    auth = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=ui_server, headers=auth, timeout=30, verify=ui_trust()) as http:
        yield http


def test_a_running_dijob_reads_in_the_argo_ui_and_a_scaled_replica_appears(
    argo_ui: str, screenshots: Path, dijob_crd: None, cluster: client.ApiClient, namespace: str,
    ui_server: str, scaler: httpx.Client, poll: Any,
) -> None:  # fmt: skip
    """The list (title, first sentence, custom columns; the row's drawer with the task table), the
    Workflow's graph (every replica by name), both links followed in the browser to the di-server's
    views, and a scale-up 2 -> 4 collectors whose new nodes the graph draws once its fold is opened."""
    start_job(cluster, namespace, NAME, collectors=2, maxReplicas=8)
    hosts = {f"{NAME}-learner-0", f"{NAME}-collector-0", f"{NAME}-collector-1"}
    live = poll(lambda: running(cluster, namespace, NAME, hosts), 60, "3 pods Running")
    nodes = poll(lambda: pod_nodes(cluster, namespace, 3), 60, "3 replica nodes")
    assert sorted(nodes) == ["collector-0", "collector-1", "learner-0"]
    wf = workflow(cluster, namespace, NAME)
    title = wf["metadata"]["annotations"][ANNOTATION_WORKFLOW_TITLE]
    first_sentence = "3 replicas: learner 1, collector 2 (membership generation 1)."
    assert wf["metadata"]["annotations"][ANNOTATION_WORKFLOW_DESCRIPTION].startswith(first_sentence)
    assert columns_of(wf) == {"Replicas": "3", "Tasks": "learner 1, collector 2", "Generation": "1"}

    with browser_page() as page:
        # the list: title and the description's first sentence in the name cell, the custom columns last
        page.goto(f"{argo_ui}/workflows/{namespace}")
        row = wait_for(page, lambda: job_row(list_table(page), title), "the DIJob's row in the workflow list")
        table = list_table(page)
        assert [h.lower() for h in table.head[-3:]] == ["replicas", "tasks", "generation"], table.head
        assert row[-3:] == ["3", "learner 1, collector 2", "1"], row
        assert first_sentence in row[0], row[0]
        # the row's drawer renders the whole description: the task table
        page.get_by_text("SHOW", exact=True).first.click()
        drawer = wait_for(page, lambda: html_tables(page, ".workflow-drawer") or None, "the drawer's task table")
        assert drawer == [
            [["task", "type", "replicas"], ["learner", "learner", "1"], ["collector", "collector", "2"]]
        ], drawer  # fmt: skip
        screenshot(page, screenshots, "workflow-list")

        # the Workflow's page: every replica's node by name
        page.goto(f"{argo_ui}/workflows/{namespace}/{NAME}")
        wait_for(page, lambda: set(nodes) <= graph_labels(page) or None, "every replica's node in the graph")
        screenshot(page, screenshots, "workflow-graph")

        # the workflow-scope link opens the DIJob's view in the di-server
        job_view = follow_link(page, "DIJob or sweep (di-server)")  # redirected by the Workflow's labels
        assert job_view.url == f"{ui_server}/ui/namespaces/{namespace}/dijobs/{NAME}", job_view.url
        assert expect_text(job_view, [f"DIJob {namespace}/{NAME}", *sorted(hosts)], "the DIJob's view")
        job_view.close()
        # the pod-scope link of the learner's node opens its replica's view
        assert click_graph_node(page, nodes["learner-0"]), graph_node_ids(page)
        pod_view = follow_link(page, "Replica (di-server)")
        learner_pod = live[f"{NAME}-learner-0"]
        assert pod_view.url.endswith(f"/dijobs/{NAME}/pods/{learner_pod.metadata.name}"), pod_view.url
        expect_text(pod_view, [f"Pod {learner_pod.metadata.name}", f"{NAME}-learner-0"], "the replica's view")
        pod_view.close()
        for view in (job_view.url, pod_view.url):
            assert httpx.get(view, timeout=30, verify=ui_trust()).status_code == 200, view

        # a scale-up: the new replicas become new nodes of the same graph
        up = scaler.put(f"/v1/namespaces/{namespace}/dijobs/{NAME}/tasks/collector/replicas", json={"replicas": 4})
        assert up.status_code == 200, up.text
        grown_hosts = hosts | {f"{NAME}-collector-2", f"{NAME}-collector-3"}
        poll(lambda: running(cluster, namespace, NAME, grown_hosts), 60, "5 pods Running")
        grown = poll(lambda: pod_nodes(cluster, namespace, 5), 60, "5 replica nodes")
        # past three siblings the graph folds the middle ones into one "N hidden nodes" node; open it
        folded = wait_for(
            page,
            lambda: next((t.split(" (", 1)[0] for t in graph_node_ids(page) if t.endswith(" hidden nodes)")), None),
            "the graph's fold of the scaled-up siblings",
        )
        assert click_graph_node(page, folded), graph_node_ids(page)
        wait_for(page, lambda: set(grown) <= graph_labels(page) or None, "every replica's node after the scale-up")
        screenshot(page, screenshots, "workflow-graph-scaled")
