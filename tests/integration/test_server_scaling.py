"""The di-server scales running jobs on the local control plane (real Argo controller, kwok pods).

Each test creates a DIJob and its objects (render + create, as the controller does) with
long-running replicas, runs the server in-process on 127.0.0.1 (uvicorn in a thread) and talks to
it over HTTP with ServiceAccount tokens from the TokenRequest API.

The server itself runs as the chart's ServiceAccount ``dihera-system:dihera-server``: its RBAC objects
come from ``helm template`` (tests.chart.helm), are applied to the cluster, and the server's API client
holds a token of that ServiceAccount, so a permission missing from templates/server/_rules.tpl fails here.
"""

from __future__ import annotations

import json
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from dihera import load_job
from dihera.kube import api_client
from dihera.kube.scale_executor import JobScaler
from dihera.membership import Membership
from dihera.render import render
from dihera.scaling import RETIRED_TEMPLATE, ScaleError, ScaleRequest, read_dag
from dihera.schema import GROUP, PLURAL, VERSION
from dihera.server import KubeBackend, ServerSettings, create_app
from tests.builders import job as job_doc
from tests.builders import task
from tests.chart import helm
from tests.chart.helm import RELEASE_NAMESPACE, Manifest

pytestmark = pytest.mark.cluster
LONG = {"metadata": {"annotations": {"sim.dihera.io/run-seconds": "600"}}}
ARGO = ("argoproj.io", "v1alpha1")


def _task(type_: str, replicas: int) -> dict[str, Any]:
    entry = task(type_, replicas=replicas)
    entry["template"]["spec"]["containers"][0]["command"] = ["sleep", "600"]  # Argo needs a command
    entry["template"].update(LONG)
    return entry


def start_job(api: client.ApiClient, namespace: str, name: str, collectors: int, **spec: Any) -> None:
    """Create the DIJob, then its ConfigMap, Service and Workflow (owned by the DIJob)."""
    start_doc(api, namespace, job_doc(_task("learner", 1), _task("collector", collectors), name=name, **spec))


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


def sa_token(api: client.ApiClient, namespace: str, name: str, verbs: list[str] | None) -> str:
    """A token of a new ServiceAccount; ``verbs`` on dijobs in the namespace (None: no RBAC at all)."""
    core, rbac = client.CoreV1Api(api), client.RbacAuthorizationV1Api(api)
    core.create_namespaced_service_account(namespace, {"metadata": {"name": name}})
    if verbs is not None:
        rule = {"apiGroups": [GROUP], "resources": ["dijobs"], "verbs": verbs}
        rbac.create_namespaced_role(namespace, {"metadata": {"name": name}, "rules": [rule]})
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


@pytest.fixture(scope="session")
def server_kubeconfig(kubeconfig: Path, cluster: client.ApiClient, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A kubeconfig of ``dihera-system:dihera-server`` with the chart's default (cluster-wide) RBAC."""
    path, _ = install_server_rbac(kubeconfig, cluster, tmp_path_factory.mktemp("server-sa"))
    return path


@contextmanager
def running_server(settings: ServerSettings, kubeconfig: Path, port: int = 0) -> Iterator[str]:
    """A di-server with ``settings`` acting as the identity of ``kubeconfig``, on loopback ``port`` (0: a free
    one); its URL."""
    backend = KubeBackend(api_client(str(kubeconfig)), settings).start()
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    srv = uvicorn.Server(uvicorn.Config(create_app(settings, backend), log_level="warning"))
    thread = threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True)
    try:
        assert backend.wait_ready(30), f"server caches of {settings.scope()} did not sync (RBAC?)"
        thread.start()
        deadline = time.monotonic() + 10
        while not srv.started and time.monotonic() < deadline:
            time.sleep(0.05)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        srv.should_exit = True
        if thread.is_alive():
            thread.join(10)
        sock.close()
        backend.stop()


@pytest.fixture
def server(server_kubeconfig: Path, namespace: str) -> Iterator[str]:
    """A di-server as the chart's ServiceAccount, serving the test namespace; yields its URL."""
    with running_server(ServerSettings(namespaces=(namespace,), auth_cache_seconds=0.0), server_kubeconfig) as url:
        yield url


def _env(pod: client.V1Pod) -> dict[str, Any]:
    main = next(c for c in pod.spec.containers if c.name == "main")
    return {e.name: e.value if e.value is not None else e.value_from.config_map_key_ref.key for e in main.env}


@pytest.mark.compat
def test_collectors_go_2_5_3_and_survivors_are_untouched(
    dijob_crd: None, cluster: client.ApiClient, namespace: str, server: str, poll: Any
) -> None:
    name, fq = "elastic", f"di-elastic.{namespace}.svc.cluster.local"
    start_job(cluster, namespace, name, collectors=2, maxReplicas=8)
    token = sa_token(cluster, namespace, "scaler", ["get", "patch"])
    http = httpx.Client(base_url=server, headers={"Authorization": f"Bearer {token}"}, timeout=30)
    hosts = {f"{name}-learner-0", f"{name}-collector-0", f"{name}-collector-1"}
    before = poll(lambda: running(cluster, namespace, name, hosts), 60, "3 pods Running")
    uids = {h: p.metadata.uid for h, p in before.items()}

    # 2 -> 5 through the clean API
    up = http.put(f"/v1/namespaces/{namespace}/dijobs/{name}/tasks/collector/replicas", json={"replicas": 5})
    assert up.status_code == 200, up.text
    assert [(r["name"], r["rank"]) for r in up.json()["added"]] == [
        ("collector-2", 3),
        ("collector-3", 4),
        ("collector-4", 5),
    ]
    hosts |= {f"{name}-collector-{i}" for i in (2, 3, 4)}
    after = poll(lambda: running(cluster, namespace, name, hosts), 60, "6 pods Running")
    assert {h: after[h].metadata.uid for h in uids} == uids, "a surviving pod was replaced"
    members, data = membership(cluster, namespace, name)
    assert members.generation == 2
    assert data["DI_NODES"].split(",") == [
        f"{name}-{n}.{fq}"
        for n in ("learner-0", "collector-0", "collector-1", "collector-2", "collector-3", "collector-4")
    ]
    for i, rank in ((2, "3"), (3, "4"), (4, "5")):
        pod = after[f"{name}-collector-{i}"]
        env = _env(pod)
        assert env["DI_RANK"] == rank and pod.metadata.annotations["diengine/rank"] == rank
        assert env["DI_FQDN"] == f"{name}-collector-{i}.{fq}"
        assert env["DI_NODES"] == "DI_NODES"  # a configMapKeyRef to the membership ConfigMap
        assert pod.spec.hostname == f"{name}-collector-{i}" and pod.spec.subdomain == f"di-{name}"
    assert spec_replicas(cluster, namespace, name) == {"learner": 1, "collector": 5}

    # 5 -> 3 through DI-orchestrator's route: the two highest-ranked collectors go
    down = http.request("DELETE", f"/v2alpha1/job/{namespace}.{name}/replicas", json={"replicas": 2})
    assert down.status_code == 200, down.text
    assert down.json()["data"]["removed"] == ["collector-3", "collector-4"]
    hosts -= {f"{name}-collector-3", f"{name}-collector-4"}
    final = poll(lambda: running(cluster, namespace, name, hosts), 60, "4 pods Running, the removed ones gone")
    assert {h: final[h].metadata.uid for h in hosts} == {h: after[h].metadata.uid for h in hosts}
    assert spec_replicas(cluster, namespace, name) == {"learner": 1, "collector": 3}

    # a named replica, not the highest-ranked
    named = http.post(f"/v1/namespaces/{namespace}/dijobs/{name}/replicas:remove", json={"replicas": ["collector-0"]})
    assert named.status_code == 200 and named.json()["removed"] == ["collector-0"]
    hosts.discard(f"{name}-collector-0")
    poll(lambda: running(cluster, namespace, name, hosts), 60, "collector-0 gone")

    time.sleep(5)  # Argo had time to retry a removed replica: it must not
    assert set(pods(cluster, namespace, name)) == hosts
    wf = workflow(cluster, namespace, name)
    assert wf["status"]["phase"] == "Running"
    assert sorted(read_dag(wf).retired) == ["collector-0", "collector-3", "collector-4"]
    workflows = client.CustomObjectsApi(cluster).list_namespaced_custom_object(*ARGO, namespace, "workflows")
    assert [w["metadata"]["name"] for w in workflows["items"]] == [name]
    rows = http.get(f"/v1/namespaces/{namespace}/dijobs/{name}/replicas").json()
    assert [(r["rank"], r["name"], r["phase"]) for r in rows] == [
        (0, "learner-0", "Running"),
        (2, "collector-1", "Running"),
        (3, "collector-2", "Running"),
    ]
    retired = [t for t in wf["spec"]["templates"] if t["name"] == RETIRED_TEMPLATE]
    assert [t["suspend"] for t in retired] == [{"duration": "0"}]


def test_refused_requests_get_the_right_4xx_and_change_nothing(
    dijob_crd: None, cluster: client.ApiClient, namespace: str, server: str
) -> None:
    name = "guarded"
    start_job(cluster, namespace, name, collectors=2, maxReplicas=4)
    good = sa_token(cluster, namespace, "scaler", ["get", "patch"])
    reader = sa_token(cluster, namespace, "reader", ["get"])
    nobody = sa_token(cluster, namespace, "nobody", None)
    base = f"/v1/namespaces/{namespace}/dijobs/{name}"
    put = f"{base}/tasks/collector/replicas"
    before = (membership(cluster, namespace, name), spec_replicas(cluster, namespace, name))
    cases = [
        ("PUT", put, {"replicas": 9}, good, 400, "outside its bounds (minReplicas=2, maxReplicas=4)"),
        (
            "PUT",
            f"/v1/namespaces/{namespace}/dijobs/missing/tasks/collector/replicas",
            {"replicas": 3},
            good,
            404,
            f"DIJob {namespace}/missing not found",
        ),
        ("PUT", put, {"replicas": "three"}, good, 400, "body.replicas"),
        ("PUT", put, {"replicas": 3, "namespace": "kube-system"}, good, 400, "body.namespace"),
        ("PUT", put, {"replicas": 3}, None, 401, "missing bearer token"),
        ("PUT", put, {"replicas": 3}, "not-a-token", 401, "not accepted"),
        ("PUT", put, {"replicas": 3}, nobody, 403, f"system:serviceaccount:{namespace}:nobody may not patch"),
        ("PUT", put, {"replicas": 3}, reader, 403, "may not patch"),
        ("GET", base, None, nobody, 403, "may not get"),
    ]
    for method, path, body, token, status, message in cases:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        resp = httpx.request(method, server + path, json=body, headers=headers, timeout=30)
        assert resp.status_code == status, (method, path, body, resp.text)
        assert message in resp.json()["detail"], resp.text
    assert (membership(cluster, namespace, name), spec_replicas(cluster, namespace, name)) == before
    assert httpx.get(server + base, headers={"Authorization": f"Bearer {reader}"}).status_code == 200


def test_concurrent_requests_leave_a_consistent_count(
    dijob_crd: None, cluster: client.ApiClient, namespace: str, server: str
) -> None:
    name = "busy"
    start_job(cluster, namespace, name, collectors=2, maxReplicas=15)
    token = sa_token(cluster, namespace, "scaler", ["get", "patch"])
    other = JobScaler(cluster)  # a second writer with its own locks: its races are settled by resourceVersions

    def via_server(i: int) -> bool:
        method = "POST" if i % 3 else "DELETE"
        resp = httpx.request(
            method,
            f"{server}/v2alpha1/job/{namespace}.{name}/replicas",
            json={"replicas": 1},
            headers={"Authorization": f"Bearer {token}"},
            timeout=60,
        )
        assert resp.status_code in (200, 400), resp.text
        return resp.status_code == 200 and resp.json()["data"]["changed"]

    def direct(i: int) -> bool:
        try:
            return other.scale(namespace, name, ScaleRequest.add("collector", 1)).changed
        except ScaleError as err:
            assert err.reason == "out-of-bounds", err
            return False

    with ThreadPoolExecutor(max_workers=16) as pool:
        results = list(pool.map(lambda i: via_server(i) if i < 40 else direct(i), range(50)))
    members, data = membership(cluster, namespace, name)
    collectors = len(members.of_task("collector"))
    assert members.generation == 1 + sum(results)
    assert 1 <= collectors <= 14
    assert spec_replicas(cluster, namespace, name) == {"learner": 1, "collector": collectors}
    dag = read_dag(workflow(cluster, namespace, name))
    assert sorted(dag.live) == sorted(f"{r.task}-{r.index}" for r in members.replicas)
    assert len({r.rank for r in members.replicas}) == len(members.replicas)
    assert json.loads(data["membership.json"])["generation"] == members.generation
