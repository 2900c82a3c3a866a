"""The di-server on the local control plane, and DIJobs started without a controller for it to scale.

A job is started as the controller would (render + create: the DIJob, then its ConfigMap, Service and
Workflow) with long-running kwok replicas; the server runs in-process on loopback (uvicorn in a thread)
as the chart's ServiceAccount, whose RBAC comes from ``helm template`` (tests.chart.helm), and callers
get ServiceAccount tokens from the TokenRequest API. The ``server_kubeconfig``, ``server`` and
``ui_server`` fixtures (conftest.py) are made of these.
"""

from __future__ import annotations

import copy
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from ci.devcluster import Cluster, Settings
from dihera import load_job
from dihera.constants import PROFILINGS_SUBRESOURCE
from dihera.kube import api_client
from dihera.membership import Membership
from dihera.render import render
from dihera.schema import GROUP, PLURAL, VERSION
from dihera.server import KubeBackend, ServerSettings, create_app
from tests.builders import job as job_doc
from tests.builders import task
from tests.chart import helm
from tests.chart.helm import RELEASE_NAMESPACE, Manifest

__all__ = [
    "ARGO",
    "LONG",
    "RBAC_KINDS",
    "REPORT_RULE",
    "Tls",
    "apply",
    "argo_ui_config",
    "bind_reporter",
    "delete",
    "identity_kubeconfig",
    "install_server_rbac",
    "local_tls",
    "long_task",
    "membership",
    "pod_token",
    "pods",
    "running",
    "running_server",
    "sa_token",
    "server_rbac",
    "spec_replicas",
    "start_doc",
    "start_job",
    "token_client",
    "ui_trust",
    "workflow",
]

ARGO_NAMESPACE, ARGO_CONFIGMAP = "argo", "workflow-controller-configmap"
LONG = {"metadata": {"annotations": {"sim.dihera.io/run-seconds": "600"}}}
ARGO = ("argoproj.io", "v1alpha1")


def long_task(type_: str, replicas: int) -> dict[str, Any]:
    """A task whose pods run 600 s on kwok nodes (a job that stays Running)."""
    entry = task(type_, replicas=replicas)
    entry["template"]["spec"]["containers"][0]["command"] = ["sleep", "600"]  # Argo needs a command
    entry["template"].update(LONG)
    return entry


def start_job(api: client.ApiClient, namespace: str, name: str, collectors: int, **spec: Any) -> None:
    """Create the DIJob, then its ConfigMap, Service and Workflow (owned by the DIJob)."""
    start_doc(api, namespace, job_doc(long_task("learner", 1), long_task("collector", collectors), name=name, **spec))


def start_doc(api: client.ApiClient, namespace: str, doc: dict[str, Any]) -> None:
    """Create the DIJob ``doc``, then render what the controller would create and create it (no controller)."""
    custom, core = client.CustomObjectsApi(api), client.CoreV1Api(api)
    stored = custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, doc)
    rendered = render(load_job(stored))
    core.create_namespaced_config_map(namespace, rendered.configmap)
    core.create_namespaced_service(namespace, rendered.service)
    custom.create_namespaced_custom_object(*ARGO, namespace, "workflows", rendered.workflow)


def pods(api: client.ApiClient, namespace: str, name: str) -> dict[str, client.V1Pod]:
    """Live pods of a job by hostname (``diengine/pod``), pods being deleted left out."""
    items = client.CoreV1Api(api).list_namespaced_pod(namespace, label_selector=f"diengine/job={name}").items
    return {p.metadata.labels["diengine/pod"]: p for p in items if p.metadata.deletion_timestamp is None}


def running(api: client.ApiClient, namespace: str, name: str, hosts: set[str]) -> dict[str, client.V1Pod] | None:
    live = pods(api, namespace, name)
    ok = set(live) == hosts and all(p.status.phase == "Running" for p in live.values())
    return live if ok else None


def membership(api: client.ApiClient, namespace: str, name: str) -> tuple[Membership, dict[str, str]]:
    data = client.CoreV1Api(api).read_namespaced_config_map(f"di-{name}", namespace).data
    return Membership.from_json(data["membership.json"]), data


def spec_replicas(api: client.ApiClient, namespace: str, name: str) -> dict[str, int]:
    body = client.CustomObjectsApi(api).get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)
    return {t.get("name") or t["type"]: t["replicas"] for t in body["spec"]["tasks"]}


def workflow(api: client.ApiClient, namespace: str, name: str) -> dict[str, Any]:
    wf: dict[str, Any] = client.CustomObjectsApi(api).get_namespaced_custom_object(*ARGO, namespace, "workflows", name)
    return wf


#: The report right (the chart's ClusterRole ``<fullname>-reporter``): what the di-server's profilings route asks.
REPORT_RULE = {"apiGroups": [GROUP], "resources": [f"{PLURAL}/{PROFILINGS_SUBRESOURCE}"], "verbs": ["create"]}


def sa_token(api: client.ApiClient, namespace: str, name: str, verbs: list[str] | None, report: bool = False) -> str:
    """A token of a new ServiceAccount; ``verbs`` on dijobs in the namespace (None: no RBAC at all), and with
    ``report`` the report right (:data:`REPORT_RULE`)."""
    core, rbac = client.CoreV1Api(api), client.RbacAuthorizationV1Api(api)
    core.create_namespaced_service_account(namespace, {"metadata": {"name": name}})
    if verbs is not None:
        rules = [{"apiGroups": [GROUP], "resources": ["dijobs"], "verbs": verbs}, *([REPORT_RULE] if report else [])]
        rbac.create_namespaced_role(namespace, {"metadata": {"name": name}, "rules": rules})
        rbac.create_namespaced_role_binding(
            namespace,
            {
                "metadata": {"name": name},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
                "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
            },
        )
    request = client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=3600))
    token: str = core.create_namespaced_service_account_token(name, namespace, request).status.token
    return token


def token_client(api: client.ApiClient, token: str) -> client.ApiClient:
    """An API client for the cluster of ``api`` that authenticates with ``token`` only (no client certificate)."""
    config = copy.copy(api.configuration)
    config.cert_file = config.key_file = None
    config.username = config.password = None
    config.api_key, config.api_key_prefix = {"authorization": token}, {"authorization": "Bearer"}
    return client.ApiClient(config)


def bind_reporter(kubeconfig: Path, namespace: str, account: str) -> list[Manifest]:
    """Give ServiceAccount ``account`` of ``namespace`` the chart's reporter role, and nothing else: its ClusterRole
    as ``helm template`` renders it (copied under a name of the namespace's, so tests never share it) and its
    RoleBinding as the chart binds it in a watched namespace. The cluster-scoped objects made (for :func:`delete`)."""
    objects = helm.render({"watchNamespaces": [namespace], "executor": {"rbac": True, "serviceAccounts": [account]}})
    role = copy.deepcopy(helm.one(objects, "ClusterRole", "dihera-reporter"))
    binding = copy.deepcopy(helm.one(objects, "RoleBinding", "dihera-reporter", namespace))
    role["metadata"]["name"] = binding["roleRef"]["name"] = binding["metadata"]["name"] = f"{namespace}-reporter"
    apply(kubeconfig, [role, binding])
    return [role]


def pod_token(api: client.ApiClient, pod: client.V1Pod) -> str:
    """A token of the pod's ServiceAccount bound to the pod, as the kubelet mounts it (its TokenReview names the
    pod in ``user.extra``)."""
    meta = pod.metadata
    bound = client.V1BoundObjectReference(api_version="v1", kind="Pod", name=meta.name, uid=meta.uid)
    spec = client.V1TokenRequestSpec(audiences=[], expiration_seconds=3600, bound_object_ref=bound)
    account = pod.spec.service_account_name or "default"
    request = client.AuthenticationV1TokenRequest(spec=spec)
    answer = client.CoreV1Api(api).create_namespaced_service_account_token(account, meta.namespace, request)
    token: str = answer.status.token
    return token


RBAC_KINDS = ("ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding")


def server_rbac(values: Manifest | None = None) -> tuple[str, list[Manifest]]:
    """The server's ServiceAccount name and its RBAC objects, as ``helm template`` renders them with ``values``."""
    objects = helm.render(values)
    sa = next(o for o in objects if o["kind"] == "ServiceAccount" and o["metadata"]["name"].endswith("-server"))
    name = sa["metadata"]["name"]
    helm.one(objects, "ClusterRole", name)  # token and access reviews: always a ClusterRole
    return name, [o for o in objects if o["kind"] in RBAC_KINDS and o["metadata"]["name"] == name]


def apply(kubeconfig: Path, objects: list[Manifest]) -> None:
    cmd = ["kubectl", f"--kubeconfig={kubeconfig}", "apply", "--server-side", "--force-conflicts", "-f", "-"]
    done = subprocess.run(cmd, input=yaml.safe_dump_all(objects), capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"kubectl apply: {done.stderr}"


def delete(api: client.ApiClient, objects: list[Manifest]) -> None:
    """Remove what :func:`apply` created outside test namespaces (namespaced Roles go with their namespace)."""
    rbac, core = client.RbacAuthorizationV1Api(api), client.CoreV1Api(api)
    calls = {
        "ClusterRole": lambda m: rbac.delete_cluster_role(m["name"]),
        "ClusterRoleBinding": lambda m: rbac.delete_cluster_role_binding(m["name"]),
        "ServiceAccount": lambda m: core.delete_namespaced_service_account(m["name"], m["namespace"]),
    }
    for obj in objects:
        try:
            calls.get(obj["kind"], lambda m: None)(obj["metadata"])
        except ApiException as err:
            if err.status != 404:
                raise


def identity_kubeconfig(admin: Path, api: client.ApiClient, sa: str, folder: Path) -> Path:
    """A kubeconfig for the cluster of ``admin`` holding a TokenRequest token of ``dihera-system:<sa>``."""
    core = client.CoreV1Api(api)
    request = client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=7200))
    token = core.create_namespaced_service_account_token(sa, RELEASE_NAMESPACE, request).status.token
    config = yaml.safe_load(admin.read_text())
    context = next(c for c in config["contexts"] if c["name"] == config["current-context"])["context"]
    entry = next(c for c in config["clusters"] if c["name"] == context["cluster"])
    path = folder / f"{sa}.kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [entry],
                "users": [{"name": sa, "user": {"token": token}}],
                "contexts": [{"name": sa, "context": {"cluster": entry["name"], "user": sa}}],
                "current-context": sa,
            }
        )
    )
    return path


def install_server_rbac(
    kubeconfig: Path, api: client.ApiClient, folder: Path, values: Manifest | None = None
) -> tuple[Path, list[Manifest]]:
    """Apply the chart's server RBAC for ``values``; a kubeconfig of its ServiceAccount, and what was applied."""
    try:
        client.CoreV1Api(api).create_namespace({"metadata": {"name": RELEASE_NAMESPACE}})
    except ApiException as err:
        if err.status != 409:
            raise
    sa, objects = server_rbac(values)
    apply(kubeconfig, objects)
    return identity_kubeconfig(kubeconfig, api, sa, folder), objects


@contextmanager
def running_server(settings: ServerSettings, kubeconfig: Path, port: int = 0, tls: Tls | None = None) -> Iterator[str]:
    """A di-server with ``settings`` acting as the identity of ``kubeconfig``, on loopback ``port`` (0: a free
    one), over HTTPS with ``tls``' certificate (as ``dihera server --tls-cert-file`` serves); its URL."""
    backend = KubeBackend(api_client(str(kubeconfig)), settings).start()
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    files = {"ssl_certfile": str(tls.cert), "ssl_keyfile": str(tls.key)} if tls else {}
    srv = uvicorn.Server(uvicorn.Config(create_app(settings, backend), log_level="warning", **files))
    thread = threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True)
    try:
        assert backend.wait_ready(30), f"server caches of {settings.scope()} did not sync (RBAC?)"
        thread.start()
        deadline = time.monotonic() + 10
        while not srv.started and time.monotonic() < deadline:
            time.sleep(0.05)
        yield f"{'https' if tls else 'http'}://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        srv.should_exit = True
        if thread.is_alive():
            thread.join(10)
        sock.close()
        backend.stop()


@dataclass(frozen=True)
class Tls:
    """A serving certificate and key, and the CA that signed it."""

    cert: Path
    key: Path
    ca: Path

    def trust(self) -> ssl.SSLContext:
        """What a client checks this certificate against."""
        return ssl.create_default_context(cafile=str(self.ca))


def local_tls() -> Tls:
    """The local control plane's serving certificate (for 127.0.0.1 and localhost, signed by its CA): a di-server
    in a test serves it on the port the Argo UI's links name, as `make demo`'s port-forward serves the chart's."""
    pki = Cluster(Settings.from_environ()).state.pki
    return Tls(pki / "serving.crt", pki / "serving.key", pki / "ca.crt")


def ui_trust() -> ssl.SSLContext | bool:
    """What a client checks the certificate of the di-server behind the Argo UI's links against: the local control
    plane's CA (:func:`local_tls`), or the system's CAs on another cluster."""
    tls = local_tls()
    return tls.trust() if tls.ca.is_file() else True


def argo_ui_config(cluster: client.ApiClient) -> dict[str, list[dict[str, str]]]:
    """The ``columns`` and ``links`` of Argo's ConfigMap on the cluster."""
    data = client.CoreV1Api(cluster).read_namespaced_config_map(ARGO_CONFIGMAP, ARGO_NAMESPACE).data
    return {key: yaml.safe_load(data[key]) for key in ("columns", "links")}
