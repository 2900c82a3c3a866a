"""The chart on a real API server: install (Deployments Available), upgrade (the CRD follows the schema),
uninstall (the CRD and users' DIJobs stay with crds.keep).

The CRDs are cluster-wide and other tests use the DIJob CRD: the release takes them over with
`--take-ownership`, never deletes the DIJob CRD, and the module restores every CRD at the end (the DIJob CRD
as `dihera crd` makes it, with its labels and annotations from before).
The release has its own name and namespace, so its ClusterRoles do not collide with a `dihera` release.
"""

from __future__ import annotations

import base64
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from dihera.schema import GROUP, PLURAL, VERSION, crd_manifest, dijob_schema
from tests.builders import job, task
from tests.chart.helm import CHART, KUBE_VERSION
from tests.integration.releases import DIJOB_CRD, TIMEOUT, Release, read_crd, restore_crds

pytestmark = [pytest.mark.cluster, pytest.mark.exclusive]

@pytest.fixture(scope="module")
def release(kubeconfig: Path, cluster: client.ApiClient) -> Iterator[Release]:
    """The chart installed (`--wait`) as its own release in a fresh namespace; removed afterwards."""
    rel = Release.new("dihera-it", kubeconfig)
    before = {name: read_crd(cluster, name) for name in (DIJOB_CRD,)}
    try:
        rel.restricted_namespace(cluster)
        rel.must(
            "install", rel.name, str(CHART), "--create-namespace", "--take-ownership", "--wait", "--timeout", TIMEOUT
        )
        yield rel
    finally:
        rel.remove(cluster)
        restore_crds(cluster, before)


def test_install_makes_the_deployments_available(release: Release, cluster: client.ApiClient) -> None:
    apps = client.AppsV1Api(cluster)
    for component in ("controller", "server"):
        status = apps.read_namespaced_deployment(f"{release.name}-{component}", release.namespace).status
        assert status is not None, component
        available = [c for c in status.conditions or [] if c.type == "Available"]
        assert available and available[0].status == "True", f"{component}: {status.conditions}"
        assert status.ready_replicas == 1
    crd = read_crd(cluster, DIJOB_CRD)
    assert crd is not None
    assert crd["metadata"]["annotations"]["meta.helm.sh/release-name"] == release.name
    assert crd["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    role = client.RbacAuthorizationV1Api(cluster).read_namespaced_role(
        f"{release.name}-controller-leader-election", release.namespace
    )
    assert [(r.api_groups, r.resources) for r in role.rules] == [(["coordination.k8s.io"], ["leases"])]


def modified_chart(release: Release, into: Path, marker: str) -> Path:
    """A copy of the chart whose DIJob CRD has `marker` appended to the description of `spec`."""
    chart = into / "dihera"
    shutil.copytree(CHART, chart)
    crd = yaml.safe_load(
        release.must(
            "template",
            release.name,
            str(CHART),
            "--kube-version",
            KUBE_VERSION,
            "--show-only",
            "templates/crd-dijob.yaml",
        )
    )
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    schema["description"] += marker
    (chart / "templates" / "crd-dijob.yaml").write_text(yaml.safe_dump(crd, sort_keys=False), encoding="utf-8")
    return chart


def tls_secret(release: Release, cluster: client.ApiClient) -> dict[str, str]:
    secret = client.CoreV1Api(cluster).read_namespaced_secret(f"{release.name}-server-tls", release.namespace)
    data: dict[str, str] = secret.data
    return data


def test_upgrade_changes_the_crd(release: Release, cluster: client.ApiClient, tmp_path: Path) -> None:
    """Also: the di-server's generated certificate and CA are kept across upgrades (the chart reads them back),
    so clients holding the published CA keep trusting the server."""
    generated = tls_secret(release, cluster)
    assert set(generated) == {"tls.crt", "tls.key", "ca.crt"}
    marker = f" (upgrade test {uuid.uuid4().hex[:8]})"
    chart = modified_chart(release, tmp_path, marker)
    release.must("upgrade", release.name, str(chart), "--take-ownership", "--wait", "--timeout", TIMEOUT)
    crd = read_crd(cluster, DIJOB_CRD)
    assert crd is not None
    description = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["description"]
    assert description.endswith(marker)
    release.must("upgrade", release.name, str(CHART), "--take-ownership", "--wait", "--timeout", TIMEOUT)
    crd = read_crd(cluster, DIJOB_CRD)
    assert crd is not None
    assert crd["spec"]["versions"][0]["schema"] == crd_manifest(dijob_schema())["spec"]["versions"][0]["schema"]
    assert tls_secret(release, cluster) == generated
    published = client.CoreV1Api(cluster).read_namespaced_config_map(f"{release.name}-server-ca", release.namespace)
    assert published.data["ca.crt"] == base64.b64decode(generated["ca.crt"]).decode()


def test_namespaced_install(kubeconfig: Path, cluster: client.ApiClient, namespace: str) -> None:
    """watchNamespaces on a real API server: Roles in the watched namespace, no controller ClusterRole."""
    rel = Release.new("dihera-ns", kubeconfig)
    values = [
        "--set",
        "crds.enabled=false",
        "--set",
        "leaderElection.enabled=false",
        "--set",
        f"watchNamespaces={{{namespace}}}",
    ]
    try:
        rel.must("install", rel.name, str(CHART), "--create-namespace", *values, "--wait", "--timeout", TIMEOUT)
        rbac = client.RbacAuthorizationV1Api(cluster)
        for component in ("controller", "server"):
            role = rbac.read_namespaced_role(f"{rel.name}-{component}", namespace)
            assert role.rules, component
            rbac.read_namespaced_role_binding(f"{rel.name}-{component}", namespace)
        cluster_roles = {r.metadata.name for r in rbac.list_cluster_role().items if r.metadata}
        assert f"{rel.name}-controller" not in cluster_roles
        assert f"{rel.name}-server" in cluster_roles
        for component in ("controller", "server"):
            status = (
                client.AppsV1Api(cluster).read_namespaced_deployment(f"{rel.name}-{component}", rel.namespace).status
            )
            assert status is not None and status.ready_replicas == 1, component
    finally:
        rel.remove(cluster)


def test_uninstall_keeps_the_crd_and_dijobs(release: Release, cluster: client.ApiClient) -> None:
    objects = client.CustomObjectsApi(cluster)
    manifest = job(task("learner"), name="kept-by-uninstall")
    objects.create_namespaced_custom_object(GROUP, VERSION, release.namespace, PLURAL, manifest)
    release.must("uninstall", release.name, "--wait", "--timeout", TIMEOUT)
    assert release.helm("status", release.name).returncode != 0
    assert read_crd(cluster, DIJOB_CRD) is not None
    kept: Any = objects.get_namespaced_custom_object(GROUP, VERSION, release.namespace, PLURAL, "kept-by-uninstall")
    assert kept["spec"]["tasks"][0]["type"] == "learner"
    deployments = client.AppsV1Api(cluster).list_namespaced_deployment(release.namespace).items
    assert deployments == []
