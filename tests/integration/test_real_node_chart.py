"""The chart for real: the image built from the Dockerfile runs the controller and the di-server on the
real node (probes really served), and a DIJob runs through them to Succeeded on that node with Argo's
real executor (init and wait containers).

Named to run after test_controller_*: right after this release's controller really ran, their timing-
sensitive check that a job's first condition is Pending failed (the first status already said Running).

The release is installed like test_chart_install's (own name and namespace, CRDs taken over and restored
afterwards) with charts/dihera/ci/realnode-values.yaml: the local image, never pulled, and the real
node's selector and toleration; its namespace enforces the ``restricted`` Pod Security Standard, as the local
control plane's dihera-system does (issue 42): a pod of the chart that did not meet it would not be created.
It watches one namespace of its own, where the chart's executor
RoleBinding is all Argo's init and wait containers get (the job's pods run as `default`).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from ci.devcluster import realnode
from ci.devcluster.images import PYTHON_IMAGE, package_version
from ci.devcluster.manifests import RESTRICTED
from ci.devcluster.settings import Settings
from dihera.constants import PEER_WAIT_CONTAINER
from dihera.kube.jobs import JobStore
from dihera.schema import GROUP, PLURAL, VERSION
from tests.chart.helm import CHART
from tests.integration.conftest import Poll
from tests.integration.realjobs import ON_REAL_NODE
from tests.integration.releases import DIJOB_CRD, TIMEOUT, Release, read_crd, restore_crds

pytestmark = [pytest.mark.cluster, pytest.mark.realnode]

VALUES = CHART / "ci" / "realnode-values.yaml"


@pytest.fixture(scope="module")
def jobs_namespace(cluster: client.ApiClient, poll: Poll) -> Iterator[str]:
    """The one namespace the release watches, with its default service account."""
    core = client.CoreV1Api(cluster)
    name = f"dihera-test-real-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": name, "labels": {"dihera.io/test": "true"}}})
    try:
        poll(lambda: core.list_namespaced_service_account(name, field_selector="metadata.name=default").items, 30,
             f"the default service account of {name}")  # fmt: skip
        yield name
    finally:
        core.delete_namespace(name)


@pytest.fixture(scope="module")
def real_release(kubeconfig: Path, cluster: client.ApiClient, jobs_namespace: str, poll: Poll) -> Iterator[Release]:
    rel = Release.new("dihera-real", kubeconfig)
    before = {name: read_crd(cluster, name) for name in (DIJOB_CRD,)}
    tag = package_version(Settings.from_environ())
    try:
        rel.restricted_namespace(cluster)
        rel.must(
            "install", rel.name, str(CHART), "-f", str(VALUES), "--set", f"image.tag={tag}",
            "--set", f"watchNamespaces={{{jobs_namespace}}}",
            "--create-namespace", "--take-ownership", "--wait", "--timeout", TIMEOUT,
        )  # fmt: skip
        yield rel
    finally:
        rel.remove(cluster)
        # Real pods take a moment to stop: a controller still running would act on later tests' DIJobs.
        poll(lambda: not component_pods(cluster, rel), 90, f"the pods of release {rel.name} to be gone")
        restore_crds(cluster, before)


def component_pods(cluster: client.ApiClient, release: Release) -> list[client.V1Pod]:
    pods: list[client.V1Pod] = client.CoreV1Api(cluster).list_namespaced_pod(release.namespace).items
    return pods


def test_controller_and_server_run_on_the_real_node(real_release: Release, cluster: client.ApiClient) -> None:
    pods = component_pods(cluster, real_release)
    components = sorted(p.metadata.labels["app.kubernetes.io/component"] for p in pods)
    assert components == ["controller", "server"], components
    namespace = client.CoreV1Api(cluster).read_namespace(real_release.namespace)
    assert RESTRICTED.items() <= (namespace.metadata.labels or {}).items(), namespace.metadata.labels
    for pod in pods:
        assert pod.spec.node_name == realnode.NODE_NAME, pod.metadata.name
        assert pod.status.phase == "Running"
        main = pod.status.container_statuses[0]
        assert main.ready and main.started, main
        assert main.image.startswith("dihera.local/dihera:"), main.image
        spec = pod.spec.containers[0]
        assert spec.readiness_probe is not None and spec.liveness_probe is not None
        assert spec.security_context.read_only_root_filesystem is True
        assert pod.spec.security_context.run_as_non_root is True
    # the controller leads by the chart's Lease (`kubectl get lease -n <release namespace>` names its pod)
    controller = next(p for p in pods if p.metadata.labels["app.kubernetes.io/component"] == "controller")
    lease = client.CoordinationV1Api(cluster).read_namespaced_lease(
        f"{real_release.name}-controller", real_release.namespace
    )
    assert lease.spec is not None and lease.spec.holder_identity == controller.metadata.name, lease.spec
    # a namespaced install (watchNamespaces) starts with no error: nothing it may not list is listed
    core = client.CoreV1Api(cluster)
    for pod in pods:
        log = core.read_namespaced_pod_log(pod.metadata.name, real_release.namespace)
        errors = [line for line in log.splitlines() if "level=ERROR" in line]
        assert not errors and log.strip(), (pod.metadata.name, errors[:3] or log[-2000:])


def real_job(name: str) -> dict[str, Any]:
    container = {
        "name": "di-container",
        "image": PYTHON_IMAGE,
        "imagePullPolicy": "Never",
        "command": ["python3", "-c", "import os; print(os.environ['DI_FQDN'], os.environ['DI_RANK'])"],
    }
    template = {"spec": {"containers": [container], **ON_REAL_NODE}}
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "DIJob",
        "metadata": {"name": name},
        "spec": {
            "cleanPodPolicy": "None",  # keep the pods to look at
            "tasks": [{"type": "none", "name": "serial", "replicas": 1, "template": template}],
        },
    }


def test_dijob_runs_through_the_chart_on_the_real_node(
    real_release: Release, cluster: client.ApiClient, jobs_namespace: str, poll: Poll
) -> None:
    namespace = jobs_namespace
    objects = client.CustomObjectsApi(cluster)
    objects.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, real_job("real"))
    jobs = JobStore(cluster)

    def succeeded() -> dict[str, Any] | None:
        status = (jobs.get(namespace, "real") or {}).get("status", {})
        return status if status.get("phase") in ("Succeeded", "Failed") else None

    try:
        status = poll(succeeded, 240, "DIJob real to finish")
        check_job(cluster, namespace, status)
    finally:  # while the release's controller runs: it removes its finalizer, so nothing is left for later tests
        jobs.delete(namespace, "real")
        poll(lambda: jobs.get(namespace, "real") is None, 90, "DIJob real to be deleted")


def check_job(cluster: client.ApiClient, namespace: str, status: dict[str, Any]) -> None:
    pods = client.CoreV1Api(cluster).list_namespaced_pod(namespace).items
    assert status["phase"] == "Succeeded", (status, [(p.metadata.name, p.status.phase) for p in pods])
    assert pods, "the job's pods are gone"
    for pod in pods:
        assert pod.spec.node_name == realnode.NODE_NAME
        # Argo's executor, then dihera's peer wait from the chart's own image (DIHERA_PEER_WAIT_IMAGE), for real
        assert [c.name for c in pod.spec.init_containers] == ["init", PEER_WAIT_CONTAINER]
        assert pod.spec.init_containers[1].image.startswith("dihera.local/dihera:"), pod.spec.init_containers[1]
        assert "wait" in [c.name for c in pod.spec.containers]
        assert pod.status.phase == "Succeeded"
        log = client.CoreV1Api(cluster).read_namespaced_pod_log(pod.metadata.name, namespace, container="di-container")
        # The job's own line (its FQDN and rank, from dihera's env) among Argo's emissary lines (argo=true;
        # v4's emissary also logs before it).
        own = [line for line in log.splitlines() if line and "argo=true" not in line]
        assert own == [f"real-serial-0.di-real.{namespace}.svc.cluster.local 0"], log
