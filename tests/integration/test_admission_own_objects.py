"""The chart's admission policy keeps the controller's and the di-server's ServiceAccounts to dihera's own
objects (issue 57: installed cluster-wide, their RBAC reaches every namespace's ConfigMaps and pods).

The module applies, as ``helm template`` renders them, the ServiceAccounts and cluster-wide RBAC of both
components and the policy ``<fullname>-own-objects`` with a fullname of its own (so the policy selects no
other test's ServiceAccounts and needs no exclusive run), then acts with tokens of those ServiceAccounts
(TokenRequest): through dihera's own write calls (dihera/kube/objects.py: ObjectStore, the di-server's
replace with a resourceVersion) and, last, by running the controller and the di-server through a job's life.
Argo's controller ConfigMap is only written with ``dryRun=All`` (the API server admits a dry run as a real
write, and stores nothing).
"""

from __future__ import annotations

import json
import signal
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from dihera import load_job
from dihera.kube import api_client
from dihera.kube.jobs import JobStore
from dihera.kube.objects import ObjectStore
from dihera.naming import membership_configmap_name, service_name
from dihera.render import render as render_job
from dihera.render.objects import job_labels, owner_references
from dihera.schema import GROUP, PLURAL, VERSION
from dihera.server import ServerSettings
from tests.chart.helm import RELEASE_NAMESPACE, Manifest, render
from tests.integration.conftest import Poll
from tests.integration.controllers import Controller, denied
from tests.integration.jobs import edit_replicas, job_pods, manifest, phase_is, task
from tests.integration.lifecycle import set_suspend
from tests.integration.servers import (
    ARGO,
    RBAC_KINDS,
    apply,
    delete,
    identity_kubeconfig,
    running_server,
    sa_token,
)

pytestmark = [pytest.mark.cluster]

NAME = f"vap-{uuid.uuid4().hex[:6]}"  # the release's fullname: ServiceAccounts of this module's own
POLICY = f"{NAME}-own-objects"
ARGO_CONFIG = ("argo", "workflow-controller-configmap")  # the ConfigMap the issue names
NOT_OURS = "it is not one of dihera's objects"
UNMARKED = "without dihera's marks"
LONG = {"sim.dihera.io/run-seconds": "600"}


@dataclass(frozen=True)
class Identities:
    """Kubeconfigs holding tokens of the module's controller and di-server ServiceAccounts."""

    controller: Path
    server: Path

    def apis(self) -> tuple[client.ApiClient, client.ApiClient]:
        return api_client(str(self.controller)), api_client(str(self.server))


def user(component: str) -> str:
    return f"system:serviceaccount:{RELEASE_NAMESPACE}:{NAME}-{component}"


def refused(call: Callable[[], object], *says: str) -> str:
    """The API server's message refusing ``call`` (a 403 saying each of ``says``); fails if it was allowed."""
    try:
        call()
    except ApiException as err:
        message = str(json.loads(err.body or "{}").get("message", err.body))
        assert err.status == 403, f"{err.status}: {message}"
        for text in says:
            assert text in message, message
        return message
    raise AssertionError(f"allowed, but the policy should refuse it ({says})")


def argo_config_dry_run(api: client.ApiClient) -> Callable[[], object]:
    """An update of Argo's controller ConfigMap, as a dry run (admitted as a real one, nothing stored)."""
    core = client.CoreV1Api(api)
    ns, name = ARGO_CONFIG
    current = core.read_namespaced_config_map(name, ns)
    current.data = {**(current.data or {}), "parallelism": "1"}
    return lambda: core.replace_namespaced_config_map(name, ns, current, dry_run="All")


@pytest.fixture(scope="module")
def identities(
    kubeconfig: Path, cluster: client.ApiClient, tmp_path_factory: pytest.TempPathFactory, poll: Poll
) -> Iterator[Identities]:
    """The chart's ServiceAccounts, RBAC and policy for fullname ``NAME``, applied for the module and removed after."""
    objects = render({"fullnameOverride": NAME})
    rbac = [
        o
        for o in objects
        if o["kind"] in RBAC_KINDS and o["metadata"]["name"] in (f"{NAME}-controller", f"{NAME}-server")
    ]
    policy: list[Manifest] = [
        o for o in objects if o["kind"].startswith("ValidatingAdmissionPolicy") and o["metadata"]["name"] == POLICY
    ]
    assert [o["kind"] for o in policy] == ["ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"]
    try:
        client.CoreV1Api(cluster).create_namespace({"metadata": {"name": RELEASE_NAMESPACE}})
    except ApiException as err:
        if err.status != 409:
            raise
    apply(kubeconfig, rbac + policy)
    admission = client.AdmissionregistrationV1Api(cluster)
    try:
        folder = tmp_path_factory.mktemp("own-objects")
        ids = Identities(
            *(identity_kubeconfig(kubeconfig, cluster, f"{NAME}-{c}", folder) for c in ("controller", "server"))
        )
        probe = argo_config_dry_run(ids.apis()[0])

        def in_force() -> bool:  # the API server loads a new policy within a second or so
            try:
                probe()
            except ApiException as err:
                return err.status == 403 and NOT_OURS in (err.body or "")
            return False

        poll(in_force, 60, "the policy in force")
        yield ids
    finally:
        for remove in (
            admission.delete_validating_admission_policy_binding,
            admission.delete_validating_admission_policy,
        ):
            try:
                remove(POLICY)
            except ApiException as err:
                if err.status != 404:
                    raise
        delete(cluster, rbac)


def plain_configmap(name: str, labels: dict[str, str] | None = None) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels or {}},
        "data": {"a": "1"},
    }


def pod(name: str, labels: dict[str, str] | None = None, owners: list[dict[str, Any]] | None = None) -> Manifest:
    meta: dict[str, Any] = {"name": name, "labels": labels or {}}
    if owners:
        meta["ownerReferences"] = owners
    spec = {"containers": [{"name": "c", "image": "x", "command": ["sleep", "600"]}]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def running_pods(api: client.ApiClient, namespace: str) -> int:
    """Live (not deleted) Running pods of the job ``elastic``."""
    pods = job_pods(api, namespace, "elastic")
    return sum(1 for p in pods if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp"))


def test_writes_to_objects_dihera_does_not_own_are_refused(
    identities: Identities, cluster: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(cluster)
    ctl, srv = identities.apis()
    ctl_objects, srv_core = ObjectStore(ctl), client.CoreV1Api(srv)
    # Argo's controller ConfigMap, as the issue names it: both ServiceAccounts may update it by RBAC alone
    for api, who in ((ctl, "controller"), (srv, "server")):
        message = refused(argo_config_dry_run(api), "ConfigMap argo/workflow-controller-configmap", NOT_OURS)
        assert f"{user(who)} may not UPDATE ConfigMap" in message, message
    # a tenant's plain ConfigMap, and one with dihera's job label only (no managed-by, no owner)
    core.create_namespaced_config_map(namespace, plain_configmap("settings"))
    core.create_namespaced_config_map(namespace, plain_configmap("half", {"diengine/job": "elastic"}))
    for name in ("settings", "half"):
        current = ObjectStore(cluster).get_configmap(namespace, name)
        assert current is not None
        put_back = partial(ctl_objects.put_back, "ConfigMap", current, {"data": {"a": "2"}})
        refused(put_back, f"ConfigMap {namespace}/{name}", NOT_OURS)
        refused(
            partial(srv_core.replace_namespaced_config_map, name, namespace, {**current, "data": {"a": "3"}}), NOT_OURS
        )
        assert core.read_namespaced_config_map(name, namespace).data == {"a": "1"}, "the tenant's ConfigMap unchanged"
    # a ConfigMap created without the marks
    refused(
        lambda: ctl_objects.create({**plain_configmap("new"), "metadata": {"name": "new", "namespace": namespace}}),
        UNMARKED,
    )
    # a foreign Service named as a job's would be (issue 57: the controller adopted it)
    core.create_namespaced_service(
        namespace,
        {"metadata": {"name": service_name("web")}, "spec": {"clusterIP": "None", "selector": {"app": "web"}}},
    )
    found = ObjectStore(cluster).get_service(namespace, service_name("web"))
    assert found is not None
    refused(
        lambda: ctl_objects.put_back("Service", found, {"spec": {"selector": {"diengine/job": "web"}}}),
        f"Service {namespace}/di-web",
        NOT_OURS,
    )
    # a tenant's pod, and one with a job's label but neither dihera's nor owned by the job (selected by label)
    core.create_namespaced_pod(namespace, pod("web"))
    core.create_namespaced_pod(namespace, pod("lookalike", {"diengine/job": "elastic"}))
    refused(
        lambda: ctl_objects.delete_pod(namespace, "web"),
        f"Pod {namespace}/web",
        NOT_OURS,
        user("controller") + " may not DELETE",
    )
    refused(lambda: ObjectStore(srv).delete_pods(namespace, ["web", "lookalike"]), NOT_OURS)
    live = {p.metadata.name for p in core.list_namespaced_pod(namespace).items if p.metadata.deletion_timestamp is None}
    assert {"web", "lookalike"} <= live, live


def test_dihera_s_own_writes_pass(
    identities: Identities, cluster: client.ApiClient, dijob_crd: None, namespace: str
) -> None:
    core = client.CoreV1Api(cluster)
    ctl, srv = identities.apis()
    ctl_objects = ObjectStore(ctl)
    stored = client.CustomObjectsApi(cluster).create_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, manifest("elastic", namespace, task("learner"), task("collector", 2))
    )
    job = load_job(stored)
    rendered = render_job(job)
    # the controller creates the job's ConfigMap, Service and Workflow, and puts an edited ConfigMap back
    for obj in (rendered.configmap, rendered.service, rendered.workflow):
        _, created = ctl_objects.create(obj)
        assert created, obj["kind"]
    cm_name = membership_configmap_name("elastic")
    current = ctl_objects.get_configmap(namespace, cm_name)
    assert current is not None
    put = ctl_objects.put_back("ConfigMap", current, {"data": {**current["data"], "extra": "1"}})
    assert put is not None and put["data"]["extra"] == "1"
    # the di-server's scale: a replace with the resourceVersion read
    srv_core = client.CoreV1Api(srv)
    read = srv_core.read_namespaced_config_map(cm_name, namespace)
    read.data = {**read.data, "extra": "2"}
    assert srv_core.replace_namespaced_config_map(cm_name, namespace, read).data["extra"] == "2"
    # a Service put back, the Workflow stopped and deleted
    svc = ctl_objects.get_service(namespace, service_name("elastic"))
    assert svc is not None and ctl_objects.put_back("Service", svc, {"spec": rendered.service["spec"]}) is not None
    assert ctl_objects.shutdown_workflow(namespace, "elastic") is not None
    assert ctl_objects.delete_workflow(namespace, "elastic")
    # pods: dihera's labels (a replica's), and the job's label with the DIJob as owner
    core.create_namespaced_pod(namespace, pod("replica", job_labels(job)))
    core.create_namespaced_pod(namespace, pod("owned", {"diengine/job": "elastic"}, owner_references(job)))
    ObjectStore(srv).delete_pods(namespace, ["replica"])
    ctl_objects.delete_pod(namespace, "owned")
    live = {p.metadata.name for p in core.list_namespaced_pod(namespace).items if p.metadata.deletion_timestamp is None}
    assert not {"replica", "owned"} & live, live


def test_the_controller_and_the_di_server_run_a_job_under_the_policy(
    identities: Identities, cluster: client.ApiClient, dijob_crd: None, namespace: str, tmp_path: Path, poll: Poll
) -> None:
    """Create, run, a Service and a membership ConfigMap edited and put back, a hand edit scaled by the
    controller, a scale-up and a scale-down by the di-server (its retired pod deleted), a suspension: no
    write refused (the controller logs no 403, the di-server answers 200)."""
    jobs, core = JobStore(cluster), client.CoreV1Api(cluster)
    ctl = Controller(identities.controller, namespace, tmp_path / "controller.log")
    ctl.start()
    try:
        jobs.create(
            manifest("elastic", namespace, task("learner", **LONG), task("collector", 2, **LONG), maxReplicas=8)
        )
        poll(phase_is(jobs, namespace, "elastic", "Running"), 120, "elastic Running")
        core.patch_namespaced_service(service_name("elastic"), namespace, {"spec": {"selector": {"diengine/job": "x"}}})
        poll(
            lambda: (
                core.read_namespaced_service(service_name("elastic"), namespace).spec.selector
                == {"diengine/job": "elastic"}
            ),
            30,
            "the Service put back",
        )
        cm = membership_configmap_name("elastic")
        before = core.read_namespaced_config_map(cm, namespace).data
        edited = next(k for k in before if k not in ("membership.json", "generation"))
        core.patch_namespaced_config_map(cm, namespace, {"data": {edited: "edited"}})
        poll(lambda: core.read_namespaced_config_map(cm, namespace).data == before, 30, "the membership put back")
        edit_replicas(cluster, namespace, "elastic", collector=1)  # the controller's scale: ConfigMap, Workflow, pods
        poll(lambda: (jobs.get(namespace, "elastic") or {}).get("status", {}).get("replicas") == 2, 90, "2 replicas")
        token = sa_token(cluster, namespace, "caller", ["get", "patch"])
        settings = ServerSettings(namespaces=(namespace,), auth_cache_seconds=0.0)
        with running_server(settings, identities.server) as url:
            http = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60)
            job = f"{namespace}.elastic"
            resp = http.post(f"/v2alpha1/job/{job}/replicas", json={"replicas": 1})
            assert resp.status_code == 200, resp.text
            poll(lambda: running_pods(cluster, namespace) == 3, 90, "3 replicas Running after the scale-up")
            # the di-server's scale-down: membership replaced, Workflow patched, the retired live pod deleted
            resp = http.request("DELETE", f"/v2alpha1/job/{job}/replicas", json={"replicas": 1})
            assert resp.status_code == 200, resp.text
            poll(lambda: running_pods(cluster, namespace) == 2, 90, "2 replicas Running after the scale-down")
        set_suspend(cluster, namespace, "elastic", True)  # the controller deletes the Workflow
        poll(lambda: ObjectStore(cluster).get_workflow(namespace, "elastic") is None, 60, "the Workflow deleted")
    finally:
        ctl.kill(signal.SIGTERM)
        print(ctl.logs()[-6000:])
    assert not denied(ctl.logs()), f"the policy refused a write of the controller:\n{denied(ctl.logs())[0]}"
    assert client.CustomObjectsApi(cluster).list_namespaced_custom_object(*ARGO, namespace, "workflows")["items"] == []
