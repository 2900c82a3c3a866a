"""The di-server scales running jobs on the local control plane (real Argo controller, kwok pods).

Each test creates a DIJob and its objects (render + create, as the controller does) with
long-running replicas, runs the server in-process on 127.0.0.1 (uvicorn in a thread) and talks to
it over HTTP with ServiceAccount tokens from the TokenRequest API.

The server itself runs as the chart's ServiceAccount ``dihera-system:dihera-server``: its RBAC objects
come from ``helm template`` (tests.chart.helm), are applied to the cluster, and the server's API client
holds a token of that ServiceAccount, so a permission missing from templates/server/_rules.tpl fails here
(the ``server`` fixture of conftest.py; tests/integration/servers.py).
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from dihera.kube.scale_executor import JobScaler
from dihera.scaling import RETIRED_TEMPLATE, ScaleError, ScaleRequest, read_dag
from dihera.schema import GROUP, PLURAL, VERSION
from tests.integration.servers import (
    ARGO,
    bind_reporter,
    delete,
    membership,
    pod_token,
    pods,
    running,
    sa_token,
    spec_replicas,
    start_job,
    token_client,
    workflow,
)

pytestmark = pytest.mark.cluster


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


def test_a_pod_token_with_only_the_report_right_reports_and_can_do_nothing_else(
    dijob_crd: None, cluster: client.ApiClient, kubeconfig: Path, namespace: str, server: str, poll: Any
) -> None:
    """Issue 57, as a job's code would try it: a replica pod's own token (ServiceAccount ``default``, bound to the
    pod, with the chart's reporter role only, bound as the chart binds it in a watched namespace) reports into its
    DIJob's status.profilings through the di-server, and cannot scale through it, patch or read the DIJob at the
    API server, or report into another job; a report past a bound (the review's 50,000 keys) is refused."""
    name, hosts = "reported", {"reported-learner-0", "reported-collector-0", "reported-collector-1"}
    start_job(cluster, namespace, name, collectors=2, maxReplicas=4)
    start_job(cluster, namespace, "other", collectors=1)
    made = bind_reporter(kubeconfig, namespace, "default")
    custom = client.CustomObjectsApi(cluster)
    try:
        live = poll(lambda: running(cluster, namespace, name, hosts), 60, "3 pods Running")
        pod = live["reported-collector-1"]
        assert (pod.spec.service_account_name or "default") == "default"
        token = pod_token(cluster, pod)
        http = httpx.Client(base_url=server, headers={"Authorization": f"Bearer {token}"}, timeout=30)
        report = {"evalReturn": 9.5, "evalReturnHistory": [[i, i / 2] for i in range(100)]}
        resp = http.post(f"/v2alpha1/job/{namespace}.{name}/profilings", json=report)
        assert resp.status_code == 200, resp.text
        before = (membership(cluster, namespace, name), spec_replicas(cluster, namespace, name))
        scales = [
            http.put(f"/v1/namespaces/{namespace}/dijobs/{name}/tasks/collector/replicas", json={"replicas": 3}),
            http.post(f"/v2alpha1/job/{namespace}.{name}/replicas", json={"replicas": 1}),
        ]
        assert [r.status_code for r in scales] == [403, 403], [r.text for r in scales]
        assert f"system:serviceaccount:{namespace}:default may not patch" in scales[0].json()["detail"]
        elsewhere = http.post(f"/v2alpha1/job/{namespace}.other/profilings", json={"evalReturn": 1e9})
        assert elsewhere.status_code == 403, elsewhere.text
        assert f"pod {namespace}/{pod.metadata.name} is not a replica of DIJob {namespace}/other" in elsewhere.text
        as_pod = client.CustomObjectsApi(token_client(cluster, token))
        refused = []
        for call in (
            lambda: as_pod.patch_namespaced_custom_object(
                GROUP, VERSION, namespace, PLURAL, name, {"spec": {"suspend": True}}
            ),
            lambda: as_pod.patch_namespaced_custom_object_status(
                GROUP, VERSION, namespace, PLURAL, name, {"status": {"profilings": {"evalReturn": 1e9}}}
            ),
            lambda: as_pod.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name),
        ):
            with pytest.raises(ApiException) as err:
                call()
            refused.append(err.value.status)
        assert refused == [403, 403, 403]
        flood = http.post(f"/v2alpha1/job/{namespace}.{name}/profilings", json={f"k{i}": i for i in range(50_000)})
        # 400 naming the bound, or 413 where the di-server bounds every body before reading it (~600 KB)
        assert flood.status_code in (400, 413), flood.text
        assert flood.status_code == 413 or "50000 keys, more than 32" in flood.json()["message"], flood.text
        fill = [http.post(f"/v2alpha1/job/{namespace}.{name}/profilings", json={f"m{s}_{i}": i for i in range(32)})
                for s in range(3)]  # fmt: skip
        assert [r.status_code for r in fill] == [200, 200, 200], [r.text for r in fill]
        over = http.post(f"/v2alpha1/job/{namespace}.{name}/profilings", json={f"n{i}": i for i in range(31)})
        assert over.status_code == 400 and "would hold 129 keys, more than 128" in over.json()["message"], over.text
        body = custom.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)
        profilings = body["status"]["profilings"]
        assert profilings["evalReturn"] == 9.5 and profilings["evalReturnHistory"] == report["evalReturnHistory"]
        assert len(profilings) == 2 + 3 * 32 and "n0" not in profilings
        assert not body["spec"].get("suspend")
        assert (membership(cluster, namespace, name), spec_replicas(cluster, namespace, name)) == before
        other = custom.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "other")
        assert "profilings" not in (other.get("status") or {}), other.get("status")
    finally:
        delete(cluster, made)
