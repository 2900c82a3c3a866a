"""The chart installed as a Helm release of its own (own name, own namespace) on the local control plane.

The DIJob CRD is cluster-wide and other tests use it: a release takes it over with ``--take-ownership``,
never deletes it, and :func:`restore_crds` puts it back as ``dihera crd`` makes it, with its labels and
annotations from before. Used by test_chart_install.py and test_real_node_chart.py.
"""

from __future__ import annotations

import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes import client
from kubernetes.client.rest import ApiException

from ci.devcluster.manifests import RESTRICTED
from dihera.schema import GROUP, PLURAL, crd_manifest, dijob_schema
from tests.chart.helm import helm_bin

__all__ = ["DIJOB_CRD", "TIMEOUT", "Release", "read_crd", "restore_crds"]

DIJOB_CRD = f"{PLURAL}.{GROUP}"
TIMEOUT = "180s"


@dataclass(frozen=True)
class Release:
    name: str
    namespace: str
    kubeconfig: Path

    def helm(self, *args: str) -> subprocess.CompletedProcess[str]:
        cmd = [helm_bin(), *args, "--namespace", self.namespace, "--kubeconfig", str(self.kubeconfig)]
        return subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=300)

    def must(self, *args: str) -> str:
        done = self.helm(*args)
        assert done.returncode == 0, f"helm {' '.join(args)} failed:\n{done.stderr}"
        return done.stdout

    @staticmethod
    def new(prefix: str, kubeconfig: Path) -> Release:
        """A release of its own name in a namespace of its own (created by `helm install --create-namespace`)."""
        suffix = uuid.uuid4().hex[:6]
        return Release(name=f"{prefix}-{suffix}", namespace=f"dihera-chart-{suffix}", kubeconfig=kubeconfig)

    def restricted_namespace(self, api: client.ApiClient) -> None:
        """Make the release's namespace enforcing the ``restricted`` Pod Security Standard, as the local control
        plane makes dihera-system: every pod the chart makes must meet it to be created at all."""
        body = {"metadata": {"name": self.namespace, "labels": RESTRICTED}}
        client.CoreV1Api(api).create_namespace(body)

    def remove(self, api: client.ApiClient) -> None:
        """Uninstall (if still installed) and delete the namespace (not waited for)."""
        self.helm("uninstall", self.name, "--wait", "--timeout", TIMEOUT)
        try:
            client.CoreV1Api(api).delete_namespace(self.namespace)
        except ApiException as err:
            if err.status != 404:
                raise


def read_crd(api: client.ApiClient, name: str) -> dict[str, Any] | None:
    try:
        obj = client.ApiextensionsV1Api(api).read_custom_resource_definition(name)
    except ApiException as err:
        if err.status == 404:
            return None
        raise
    found: dict[str, Any] = api.sanitize_for_serialization(obj)  # type: ignore[no-untyped-call]
    return found


def restore_crds(api: client.ApiClient, before: dict[str, dict[str, Any] | None]) -> None:
    """Put the DIJob CRD back as it was: as generated (never deleted), with its labels and annotations from before.
    Another test session on the cluster may write it meanwhile (ci/test-default.sh runs two at once): a
    conflict is read again and retried."""
    for attempt in range(10):
        try:
            _restore_crds(api, before)
            return
        except ApiException as err:
            if err.status != 409 or attempt == 9:
                raise
            time.sleep(0.5)


def _restore_crds(api: client.ApiClient, before: dict[str, dict[str, Any] | None]) -> None:
    ext = client.ApiextensionsV1Api(api)
    generated = crd_manifest(dijob_schema())
    for name, old in before.items():
        now = read_crd(api, name)
        if now is None:
            if name == DIJOB_CRD:
                ext.create_custom_resource_definition(generated)
            continue
        if old is None and name != DIJOB_CRD:
            ext.delete_custom_resource_definition(name)
            continue
        meta = (old or generated)["metadata"]
        body = {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {
                "name": name,
                "resourceVersion": now["metadata"]["resourceVersion"],
                "labels": meta.get("labels") or {},
                "annotations": meta.get("annotations") or {},
            },
            "spec": generated["spec"] if name == DIJOB_CRD else now["spec"],
        }
        ext.replace_custom_resource_definition(name, body)
