"""The di-server with the chart's ``watchNamespaces``: one cache per namespace, a Role in each (marker ``cluster``).

The chart is rendered with two watched namespaces (and its own fullname, so its ClusterRole holds only
the token and access reviews); the server runs as that release's ServiceAccount, which may not list
anything cluster-wide. It must sync, serve and scale jobs in both namespaces, and nothing elsewhere.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from kubernetes import client

from dihera.server import ServerSettings
from tests.integration.servers import delete, install_server_rbac, membership, running_server, sa_token, start_job

pytestmark = pytest.mark.cluster


@pytest.fixture
def second_namespace(cluster: client.ApiClient) -> Iterator[str]:
    core = client.CoreV1Api(cluster)
    name = f"dihera-test-{uuid.uuid4().hex[:8]}"
    core.create_namespace({"metadata": {"name": name, "labels": {"dihera.io/test": "true"}}})
    try:
        yield name
    finally:
        core.delete_namespace(name)


def test_two_watched_namespaces_are_served_with_roles_only(
    dijob_crd: None,
    kubeconfig: Path,
    cluster: client.ApiClient,
    namespace: str,
    second_namespace: str,
    tmp_path: Path,
    poll: Any,
) -> None:
    watched = (namespace, second_namespace)
    values = {"watchNamespaces": list(watched), "fullnameOverride": f"dihera-{namespace[-8:]}"}
    identity, objects = install_server_rbac(kubeconfig, cluster, tmp_path, values)
    kinds = sorted({(o["kind"], o["metadata"].get("namespace", "")) for o in objects})
    assert ("Role", namespace) in kinds and ("Role", second_namespace) in kinds and ("ClusterRole", "") in kinds
    try:
        for ns in watched:
            start_job(cluster, ns, "ppo", collectors=2, maxReplicas=6)
        settings = ServerSettings(namespaces=watched, auth_cache_seconds=0.0)
        with running_server(settings, identity) as url:
            tokens = {ns: sa_token(cluster, ns, "scaler", ["get", "patch"]) for ns in watched}

            def call(method: str, ns: str, path: str, **kw: Any) -> httpx.Response:
                headers = {"Authorization": f"Bearer {tokens.get(ns, tokens[namespace])}"}
                return httpx.request(method, f"{url}/v1/namespaces/{ns}/dijobs/ppo{path}", headers=headers, **kw)

            for ns in watched:
                rows = call("GET", ns, "/replicas").json()
                assert [r["name"] for r in rows] == ["learner-0", "collector-0", "collector-1"], (ns, rows)
            up = call("PUT", second_namespace, "/tasks/collector/replicas", json={"replicas": 4}, timeout=60)
            assert up.status_code == 200, up.text
            assert membership(cluster, second_namespace, "ppo")[0].generation == 2
            poll(
                lambda: len(call("GET", second_namespace, "/replicas").json()) == 5,
                30,
                f"the cache of {second_namespace} to see 5 replicas",
            )
            assert len(call("GET", namespace, "/replicas").json()) == 3
            elsewhere = call("GET", "kube-system", "")  # the caller may not; unwatched namespaces 404 (unit test)
            assert elsewhere.status_code == 403, elsewhere.text
    finally:
        delete(cluster, objects)
