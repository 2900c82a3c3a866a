"""The API client's connections are reused: a burst of deletes, Events or reads opens no connection per request.

urllib3 gives a raw response's connection back to the pool only once its body has been read
(dihera.kube.responses); a DELETE whose echoed pod was left unread made every pod deletion of a
cleanPodPolicy or a scale-down open a new connection, with a TLS handshake on both sides. Counted here
with the pool's own counter of the connections it opened, against the real API server.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from dihera.kube.config import api_client
from dihera.kube.events import EventRecorder
from dihera.kube.objects import DELETE_CONCURRENCY, ObjectStore

pytestmark = pytest.mark.cluster
PODS = 3 * DELETE_CONCURRENCY


def opened(api: client.ApiClient) -> int:
    """How many connections the client's pool to the API server has opened so far."""
    pool = api.rest_client.pool_manager.connection_from_url(api.configuration.host)
    return int(pool.num_connections)


def parked_pod(name: str) -> dict[str, Any]:
    """A pod no node takes (its nodeSelector matches none): it only has to exist to be deleted."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "nodeSelector": {"test.dihera.io/no-such-node": "true"},
            "containers": [{"name": "main", "image": "registry.invalid/none:1"}],
        },
    }


def test_deleting_many_pods_reuses_the_pooled_connections(
    cluster: client.ApiClient, kubeconfig: Path, namespace: str
) -> None:
    core = client.CoreV1Api(cluster)
    names = [f"p{i}" for i in range(PODS)]
    for name in names:
        core.create_namespaced_pod(namespace, parked_pod(name))
    api = api_client(str(kubeconfig), connections=DELETE_CONCURRENCY)
    try:
        ObjectStore(api).delete_pods(namespace, names)
        # one connection per request in flight at most, not one per pod
        assert 1 <= opened(api) <= DELETE_CONCURRENCY, f"{opened(api)} connections for {PODS} deletions"
        left = core.list_namespaced_pod(namespace).items
        assert all(p.metadata.deletion_timestamp for p in left), [p.metadata.name for p in left]
    finally:
        api.close()


def test_events_and_reads_reuse_one_connection(cluster: client.ApiClient, kubeconfig: Path, namespace: str) -> None:
    client.CoreV1Api(cluster).create_namespaced_config_map(
        namespace, {"metadata": {"name": "present"}, "data": {"k": "v"}}
    )
    api = api_client(str(kubeconfig))
    try:
        store = ObjectStore(api)
        job = {
            "apiVersion": "diengine.opendilab.org/v2alpha1",
            "kind": "DIJob",
            "metadata": {"name": "conn", "namespace": namespace, "uid": "u-conn"},
        }
        events = EventRecorder(api)  # not started: each post is sent by this thread, one after another
        for i in range(10):
            events.post(job, "Normal", "JobPending", f"event {i}")
            assert store.get_configmap(namespace, "present") is not None
            assert store.get_configmap(namespace, "no-such-configmap") is None
        assert opened(api) == 1, f"{opened(api)} connections for 30 requests sent one after another"
        posted = client.CoreV1Api(cluster).list_namespaced_event(namespace).items
        assert sorted(e.message for e in posted if e.reason == "JobPending") == sorted(f"event {i}" for i in range(10))
    finally:
        api.close()
