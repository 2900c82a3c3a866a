"""An Idempotency-Key holds across di-server replicas: the keys live on the DIJob, not in a process.

Two di-servers run in-process (uvicorn on two loopback ports) as the chart's server ServiceAccount,
as in test_server_scaling.py; the same request with the same key sent to each scales once.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from kubernetes import client

from dihera.constants import ANNOTATION_IDEMPOTENCY
from dihera.schema import GROUP, PLURAL, VERSION
from dihera.server import ServerSettings
from tests.integration.servers import membership, running_server, sa_token, spec_replicas, start_job

pytestmark = pytest.mark.cluster


def add_one(url: str, token: str, namespace: str, name: str, key: str) -> dict[str, Any]:
    resp = httpx.post(
        f"{url}/v2alpha1/job/{namespace}.{name}/replicas",
        json={"replicas": 1},
        headers={"Authorization": f"Bearer {token}", "Idempotency-Key": key},
        timeout=60,
    )
    assert resp.status_code == 200, resp.text
    body: dict[str, Any] = resp.json()
    return body


def test_the_same_key_sent_to_two_servers_scales_once(
    dijob_crd: None,
    cluster: client.ApiClient,
    namespace: str,
    server_kubeconfig: Path,
) -> None:
    name = "twice"
    start_job(cluster, namespace, name, collectors=1, maxReplicas=8)
    token = sa_token(cluster, namespace, "caller", ["get", "patch"])
    settings = ServerSettings(namespaces=(namespace,), auth_cache_seconds=0.0)
    with running_server(settings, server_kubeconfig) as one, running_server(settings, server_kubeconfig) as two:
        assert one != two
        first = add_one(one, token, namespace, name, "retry-1")
        again = add_one(two, token, namespace, name, "retry-1")
        assert again == first and first["data"]["changed"] is True
        assert membership(cluster, namespace, name)[0].generation == 2
        assert spec_replicas(cluster, namespace, name)["collector"] == 2

        # the same key on both at once: one claims it, the other waits for its answer
        with ThreadPoolExecutor(2) as pool:
            answers = list(pool.map(lambda url: add_one(url, token, namespace, name, "race-1"), [one, two]))
        assert answers[0] == answers[1]
        assert membership(cluster, namespace, name)[0].generation == 3
        assert spec_replicas(cluster, namespace, name)["collector"] == 3

        # a new key scales again
        add_one(two, token, namespace, name, "retry-2")
        assert spec_replicas(cluster, namespace, name)["collector"] == 4
    body = client.CustomObjectsApi(cluster).get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)
    keys = json.loads(body["metadata"]["annotations"][ANNOTATION_IDEMPOTENCY])
    assert sorted(keys) == ["race-1", "retry-1", "retry-2"] and all(k["status"] == 200 for k in keys.values())
