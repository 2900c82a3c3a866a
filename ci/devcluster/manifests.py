"""Objects the dev cluster creates after the API server is up: simulated nodes, Argo's ConfigMap, the default
StorageClass and its provisioner's ConfigMap, and the chart's namespace (Pod Security ``restricted`` enforced)."""

from __future__ import annotations

import json
from typing import Any

from dihera.argo_ui import configmap_data

from . import objectstore

__all__ = [
    "ARGO_NAMESPACE",
    "KWOK_NODE_ANNOTATION",
    "RESTRICTED",
    "STORAGE_CLASS",
    "STORAGE_NAMESPACE",
    "SYSTEM_NAMESPACE",
    "argo_objects",
    "dihera_objects",
    "node_name",
    "nodes",
    "storage_objects",
]

ARGO_NAMESPACE = "argo"
#: The chart's release namespace in the README, `make demo` and docs/local-cluster.md.
SYSTEM_NAMESPACE = "dihera-system"
#: Namespace labels that make the API server enforce the ``restricted`` Pod Security Standard on its pods.
RESTRICTED = {
    "pod-security.kubernetes.io/enforce": "restricted",
    "pod-security.kubernetes.io/enforce-version": "latest",
}
KWOK_NODE_ANNOTATION = ("kwok.x-k8s.io/node", "fake")  # kwok manages nodes carrying this annotation
#: The local-path provisioner's namespace (its ConfigMap, its helper pods) and the default StorageClass (kind's name).
STORAGE_NAMESPACE = "local-path-storage"
STORAGE_CLASS = "standard"
#: Where volumes of the simulated nodes would be: never made (their helper pods are kwok's, ci/kwok/pods.yaml).
SIMULATED_VOLUMES = "/var/lib/dihera-sim-volumes"


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
    # Argo's init and wait containers pass the `restricted` Pod Security Standard (Argo's own non-root user)
    "executor": (
        "image: dihera.local/argoexec:local\nimagePullPolicy: IfNotPresent\n"
        "securityContext:\n  runAsNonRoot: true\n  runAsUser: 8737\n  runAsGroup: 8737\n"
        "  allowPrivilegeEscalation: false\n  capabilities:\n    drop: [ALL]\n"
        "  seccompProfile:\n    type: RuntimeDefault\n"
    ),
}


def dihera_objects() -> list[dict[str, Any]]:
    """The chart's namespace, made before any release: its pods (controller, di-server) must be ``restricted``."""
    return [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SYSTEM_NAMESPACE, "labels": RESTRICTED}}]


def argo_config(di_server_url: str, object_store: bool) -> dict[str, str]:
    """Argo's ConfigMap: ARGO_CONFIG, the UI's links to `di_server_url`, and with the real node's object store its
    artifact repository, the logs of every pod archived there, and the executors' credentials."""
    config = {**ARGO_CONFIG, **configmap_data(di_server_url)}
    if object_store:
        config |= objectstore.argo_config()
        config["executor"] += objectstore.executor_env()
    return config


def argo_objects(di_server_url: str, object_store: bool = False) -> list[dict[str, Any]]:
    """The `argo` namespace and the workflow-controller ConfigMap (its UI links open `di_server_url`)."""
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ARGO_NAMESPACE}},
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "workflow-controller-configmap", "namespace": ARGO_NAMESPACE},
            "data": argo_config(di_server_url, object_store),
        },
    ]


def storage_objects(real_node: str, real_node_volumes: str, helper_image: str) -> list[dict[str, Any]]:
    """The local-path provisioner's namespace and ConfigMap (upstream's scripts; volumes of the real node
    ``real_node`` under ``real_node_volumes``, made 0777 by a helper pod of ``helper_image``), and the default
    StorageClass ``standard`` (WaitForFirstConsumer: a volume is made on the node its first pod is scheduled to)."""
    config = {
        "nodePathMap": [
            {"node": "DEFAULT_PATH_FOR_NON_LISTED_NODES", "paths": [SIMULATED_VOLUMES]},
            {"node": real_node, "paths": [real_node_volumes]},
        ]
    }
    helper = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "helper-pod", "labels": {"dihera.io/local-path-helper": "true"}},
        "spec": {
            "automountServiceAccountToken": False,
            "containers": [{"name": "helper-pod", "image": helper_image, "imagePullPolicy": "Never"}],
        },
    }
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": STORAGE_NAMESPACE}},
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "local-path-config", "namespace": STORAGE_NAMESPACE},
            "data": {
                "config.json": json.dumps(config, indent=2),
                "setup": '#!/bin/sh\nset -eu\nmkdir -m 0777 -p "$VOL_DIR"\n',
                "teardown": '#!/bin/sh\nset -eu\nrm -rf "$VOL_DIR"\n',
                "helperPod.yaml": json.dumps(helper, indent=2),
            },
        },
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {
                "name": STORAGE_CLASS,
                "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
            },
            "provisioner": "rancher.io/local-path",
            "volumeBindingMode": "WaitForFirstConsumer",
            "reclaimPolicy": "Delete",
        },
    ]
