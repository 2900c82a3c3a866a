"""Kueue for the integration tests: its objects (kueue.x-k8s.io/v1beta2) for one test namespace.

The session fixture ``kueue`` (conftest.py) starts Kueue's manager on the local control plane
(`python -m ci.devcluster kueue-up`); ``kueue_queues`` makes a ResourceFlavor, a ClusterQueue with
cpu/memory quota (preemption withinClusterQueue: LowerPriority) open to the test's namespace only, a
LocalQueue there and WorkloadPriorityClasses, and deletes them after the test.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client
from kubernetes.client.rest import ApiException

GROUP = "kueue.x-k8s.io"
VERSION = "v1beta2"
#: The label that puts a job (or a DIJob) in a LocalQueue.
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"


@dataclass(frozen=True)
class Queues:
    """What `create_queues` made: names to use in Workloads / DIJobs."""

    namespace: str
    flavor: str
    cluster_queue: str
    local_queue: str
    #: WorkloadPriorityClass name -> value (cluster-scoped objects, named after the test namespace)
    priority_classes: Mapping[str, int] = field(default_factory=dict)


def custom(api: client.ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api)


def _create_cluster_object(api: client.ApiClient, plural: str, body: dict[str, Any]) -> None:
    custom(api).create_cluster_custom_object(GROUP, VERSION, plural, body)


def create_queues(
    api: client.ApiClient,
    namespace: str,
    cpu: str,
    memory: str = "64Gi",
    priority_classes: Mapping[str, int] | None = None,
    preemption: str = "LowerPriority",
) -> Queues:
    """A ResourceFlavor, a ClusterQueue (nominal quota `cpu` and `memory`, preemption withinClusterQueue
    `preemption`) admitting from `namespace` only, a LocalQueue in `namespace`, and one
    WorkloadPriorityClass per entry of `priority_classes` (name -> value; the object is named
    `<namespace>-<name>`, `Queues.priority_classes` maps those names to values)."""
    suffix = uuid.uuid4().hex[:6]
    flavor, cluster_queue, local_queue = f"{namespace}-flavor", f"{namespace}-cq-{suffix}", "queue"
    _create_cluster_object(
        api,
        "resourceflavors",
        {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ResourceFlavor", "metadata": {"name": flavor}},
    )
    _create_cluster_object(
        api,
        "clusterqueues",
        {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "ClusterQueue",
            "metadata": {"name": cluster_queue},
            "spec": {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
                "queueingStrategy": "BestEffortFIFO",
                "preemption": {"withinClusterQueue": preemption},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", "memory"],
                        "flavors": [
                            {
                                "name": flavor,
                                "resources": [
                                    {"name": "cpu", "nominalQuota": cpu},
                                    {"name": "memory", "nominalQuota": memory},
                                ],
                            }
                        ],
                    }
                ],
            },
        },
    )
    custom(api).create_namespaced_custom_object(
        GROUP,
        VERSION,
        namespace,
        "localqueues",
        {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "LocalQueue",
            "metadata": {"name": local_queue, "namespace": namespace},
            "spec": {"clusterQueue": cluster_queue},
        },
    )
    classes = {}
    for name, value in (priority_classes or {}).items():
        full = f"{namespace}-{name}"
        _create_cluster_object(
            api,
            "workloadpriorityclasses",
            {
                "apiVersion": f"{GROUP}/{VERSION}",
                "kind": "WorkloadPriorityClass",
                "metadata": {"name": full},
                "value": value,
            },
        )
        classes[full] = value
    return Queues(namespace, flavor, cluster_queue, local_queue, classes)


def _delete(call: Any, *args: str) -> None:
    try:
        call(GROUP, VERSION, *args)
    except ApiException as err:
        if err.status != 404:
            raise


def delete_queues(api: client.ApiClient, queues: Queues) -> None:
    """Delete what `create_queues` made (the namespace's Workloads go with the namespace)."""
    objects = custom(api)
    _delete(objects.delete_namespaced_custom_object, queues.namespace, "localqueues", queues.local_queue)
    _delete(objects.delete_cluster_custom_object, "clusterqueues", queues.cluster_queue)
    _delete(objects.delete_cluster_custom_object, "resourceflavors", queues.flavor)
    for name in queues.priority_classes:
        _delete(objects.delete_cluster_custom_object, "workloadpriorityclasses", name)


def workload(
    name: str, queue: str, pod_sets: Mapping[str, tuple[int, str]], priority_class: str | None = None
) -> dict[str, Any]:
    """A Workload written by hand (what a job integration creates): pod set name -> (count, cpu request)."""
    spec: dict[str, Any] = {
        "queueName": queue,
        "podSets": [
            {
                "name": ps_name,
                "count": count,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [
                            {"name": "main", "image": "dihera.local/none", "resources": {"requests": {"cpu": cpu}}}
                        ],
                    }
                },
            }
            for ps_name, (count, cpu) in pod_sets.items()
        ],
    }
    if priority_class:
        spec["priorityClassRef"] = {"group": GROUP, "kind": "WorkloadPriorityClass", "name": priority_class}
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Workload", "metadata": {"name": name}, "spec": spec}


def condition(obj: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    """The status condition `kind` of a Kueue object, or None."""
    for cond in obj.get("status", {}).get("conditions", []):
        if cond.get("type") == kind:
            return dict(cond)
    return None
