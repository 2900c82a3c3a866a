"""Objects the dev cluster creates after the API server is up: simulated nodes and Argo's ConfigMap."""

from __future__ import annotations

from typing import Any

from dihera.argo_ui import configmap_data

__all__ = ["ARGO_NAMESPACE", "KWOK_NODE_ANNOTATION", "argo_objects", "node_name", "nodes"]

ARGO_NAMESPACE = "argo"
KWOK_NODE_ANNOTATION = ("kwok.x-k8s.io/node", "fake")  # kwok manages nodes carrying this annotation


def node_name(index: int) -> str:
    return f"kwok-node-{index}"


def nodes(count: int, first: int = 0, pods: int | None = None) -> list[dict[str, Any]]:
    """`count` Node objects for kwok to simulate, numbered from `first`; ci/kwok/nodes.yaml gives them cpu,
    memory, pods (110 unless `pods` says otherwise) and GPUs. kwok takes up nodes added while it runs."""
    size = {"sim.dihera.io/pods": str(pods)} if pods is not None else {}
    return [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": node_name(i),
                "annotations": {
                    KWOK_NODE_ANNOTATION[0]: KWOK_NODE_ANNOTATION[1],
                    "node.alpha.kubernetes.io/ttl": "0",
                    **size,
                },
                "labels": {
                    "kubernetes.io/arch": "amd64",
                    "kubernetes.io/hostname": node_name(i),
                    "kubernetes.io/os": "linux",
                    "type": "kwok",
                    "nvidia.com/gpu.present": "true",
                },
            },
        }
        for i in range(first, first + count)
    ]


# The controller refuses to start without its ConfigMap. Metrics stay off: no listener beyond loopback.
# The executor (init and wait containers) is the argoexec image built here: on the real node it runs
# for real; on kwok's nodes it is only a name. The Argo UI's columns and links for DIJobs come from
# dihera.argo_ui, pointing at the di-server's URL on the host (argo_objects).
ARGO_CONFIG = {
    "metricsConfig": "enabled: false\n",
    "telemetryConfig": "enabled: false\n",
    "executor": "image: dihera.local/argoexec:local\nimagePullPolicy: IfNotPresent\n",
}


def argo_objects(di_server_url: str) -> list[dict[str, Any]]:
    """The `argo` namespace and the workflow-controller ConfigMap (its UI links open `di_server_url`)."""
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ARGO_NAMESPACE}},
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "workflow-controller-configmap", "namespace": ARGO_NAMESPACE},
            "data": {**ARGO_CONFIG, **configmap_data(di_server_url)},
        },
    ]
