"""Kueue for the integration tests: its objects (kueue.x-k8s.io/v1beta2) for one test namespace, the
controller with ``--kueue`` and the RBAC it needs (``kueue_rbac_applied``), DIJobs in a LocalQueue (``queued``).

The session fixture ``kueue`` (conftest.py) starts Kueue's manager on the local control plane
(`python -m ci.devcluster kueue-up`); ``kueue_queues`` makes a ResourceFlavor, a ClusterQueue with
cpu/memory quota (preemption withinClusterQueue: LowerPriority) open to the test's namespace only, a
LocalQueue there and WorkloadPriorityClasses, and deletes them after the test.
"""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from dihera.queueing import KueueSettings
from tests.chart import helm
from tests.integration.controllers import DIHERA, RBAC_KINDS, SA_NAME, Controller, controller_env, kubectl
from tests.integration.jobs import manifest, task
from tests.integration.lifecycle import FOREVER

GROUP = "kueue.x-k8s.io"
VERSION = "v1beta2"
#: The label that puts a job (or a DIJob) in a LocalQueue.
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"

KUEUE_VALUES = {"kueue": {"enabled": True}}
#: The WorkloadPriorityClasses of the test namespace (the fixture names them ``<namespace>-<key>``).
CLASSES = {"low": 100, "normal": 200, "high": 300, "nonpreemptible": 1000}


def kueue_settings(namespace: str) -> KueueSettings:
    return KueueSettings(
        priority_classes={p: f"{namespace}-{p}" for p in ("low", "normal", "high")},
        nonpreemptible_class=f"{namespace}-nonpreemptible",
        scale_wait=8,
    )


@contextmanager
def kueue_rbac_applied(kubeconfig: Path) -> Iterator[None]:
    """The chart's controller RBAC with ``kueue.enabled`` (a superset of the default), put back as it was after."""
    kubectl(kubeconfig, "apply", "-f", "-", stdin=yaml.safe_dump_all(controller_rbac(KUEUE_VALUES)))
    try:
        yield
    finally:
        kubectl(kubeconfig, "apply", "-f", "-", stdin=yaml.safe_dump_all(controller_rbac(None)))


def controller_rbac(values: dict[str, Any] | None) -> list[dict[str, Any]]:
    objects = helm.render(values)
    return [o for o in objects if o["kind"] in RBAC_KINDS and o["metadata"]["name"] == SA_NAME]


class KueueController(Controller):
    """``dihera controller --kueue`` mapping spec.priority to the test namespace's priority classes."""

    def start(self) -> None:
        settings = kueue_settings(self.namespace)
        classes = ",".join(f"{k}={v}" for k, v in settings.priority_classes.items())
        argv = [
            "--kueue",
            "--kueue-priority-classes",
            classes,
            "--kueue-nonpreemptible-class",
            settings.nonpreemptible_class,
        ]
        base = [DIHERA, "controller", "--kubeconfig", str(self.kubeconfig), "-n", self.namespace, "--standalone"]
        base += ["--metrics-port", str(self.metrics_port), "--health-port", "0", *argv]
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(base, stdout=out, stderr=subprocess.STDOUT, env=controller_env())


def qtask(type_: str, replicas: int, seconds: str = FOREVER["sim.dihera.io/run-seconds"]) -> dict[str, Any]:
    """A task of ``replicas`` pods asking 1 CPU each, each running ``seconds`` on a kwok node."""
    entry = task(type_, replicas, **{"sim.dihera.io/run-seconds": seconds})
    entry["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
    return entry


def queued(name: str, namespace: str, queue: str | None, *tasks: dict[str, Any], **spec: Any) -> dict[str, Any]:
    doc = manifest(name, namespace, *tasks, **spec)
    if queue is not None:
        doc["metadata"]["labels"] = {QUEUE_LABEL: queue}
    return doc


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
