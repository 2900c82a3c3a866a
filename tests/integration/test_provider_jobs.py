"""Env providers on the local control plane (real API server and Argo, kwok pods).

The pods Argo creates carry the provider's env with the per-replica values substituted (torch's
RANK, TF_CONFIG's index inside its JSON braces), and the di-server refuses to scale a torch task
unless it opts in, while the job's other tasks scale.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from kubernetes import client

from tests.builders import job as job_doc
from tests.builders import task
from tests.integration.servers import LONG, membership, running, sa_token, spec_replicas, start_doc

pytestmark = pytest.mark.cluster


def _task(type_: str, replicas: int, name: str | None = None, provider: dict[str, Any] | None = None) -> dict[str, Any]:
    entry = task(type_, name=name, replicas=replicas)
    entry["template"]["spec"]["containers"][0]["command"] = ["sleep", "600"]
    entry["template"].update(LONG)
    if provider:
        entry["envProvider"] = provider
    return entry


def _env(pod: client.V1Pod) -> dict[str, str]:
    main = next(c for c in pod.spec.containers if c.name == "main")
    return {e.name: e.value if e.value is not None else f"<{e.value_from.config_map_key_ref.key}>" for e in main.env}


def test_torch_pods_get_the_env_and_a_torch_task_is_not_scaled(
    dijob_crd: None, cluster: client.ApiClient, namespace: str, server: str, poll: Any
) -> None:
    name = "ddp"
    torch = _task("learner", 2, provider={"name": "torch"})
    start_doc(cluster, namespace, job_doc(torch, _task("collector", 1), name=name, maxReplicas=6))
    hosts = {f"{name}-learner-0", f"{name}-learner-1", f"{name}-collector-0"}
    pods = poll(lambda: running(cluster, namespace, name, hosts), 60, "3 pods Running")
    master = f"{name}-learner-0.di-{name}.{namespace}.svc.cluster.local"
    for index in (0, 1):
        env = _env(pods[f"{name}-learner-{index}"])
        got = (env["MASTER_ADDR"], env["MASTER_PORT"], env["RANK"], env["LOCAL_RANK"])
        assert got == (master, "29500", str(index), "0")
        assert env["WORLD_SIZE"] == "<TORCH_LEARNER_WORLD_SIZE>"
        main = next(c for c in pods[f"{name}-learner-{index}"].spec.containers if c.name == "main")
        assert [(p.name, p.container_port) for p in main.ports or []] == [("torch-master", 29500)]
    assert "MASTER_ADDR" not in _env(pods[f"{name}-collector-0"])
    _, data = membership(cluster, namespace, name)
    assert data["TORCH_LEARNER_WORLD_SIZE"] == "2"

    token = sa_token(cluster, namespace, "scaler", ["get", "patch"])
    http = httpx.Client(base_url=server, headers={"Authorization": f"Bearer {token}"}, timeout=30)
    before = membership(cluster, namespace, name)
    refused = http.put(f"/v1/namespaces/{namespace}/dijobs/{name}/tasks/learner/replicas", json={"replicas": 3})
    assert refused.status_code == 400, refused.text
    detail = refused.json()["detail"]
    assert "spec.tasks[0].replicas" in detail and "uses the torch env provider" in detail and "allowScaling" in detail
    assert membership(cluster, namespace, name) == before
    assert spec_replicas(cluster, namespace, name) == {"learner": 2, "collector": 1}

    ok = http.put(f"/v1/namespaces/{namespace}/dijobs/{name}/tasks/collector/replicas", json={"replicas": 2})
    assert ok.status_code == 200, ok.text
    assert spec_replicas(cluster, namespace, name) == {"learner": 2, "collector": 2}


def test_an_opted_in_torch_task_scales_and_its_world_size_follows(
    dijob_crd: None, cluster: client.ApiClient, namespace: str, server: str, poll: Any
) -> None:
    name = "elastic-ddp"
    torch = _task("learner", 2, provider={"name": "torch", "allowScaling": True})
    start_doc(cluster, namespace, job_doc(torch, name=name))
    poll(lambda: running(cluster, namespace, name, {f"{name}-learner-0", f"{name}-learner-1"}), 60, "2 pods Running")
    token = sa_token(cluster, namespace, "scaler", ["get", "patch"])
    http = httpx.Client(base_url=server, headers={"Authorization": f"Bearer {token}"}, timeout=30)
    up = http.put(f"/v1/namespaces/{namespace}/dijobs/{name}/tasks/learner/replicas", json={"replicas": 3})
    assert up.status_code == 200, up.text
    _, data = membership(cluster, namespace, name)
    assert data["TORCH_LEARNER_WORLD_SIZE"] == "3"
    hosts = {f"{name}-learner-{i}" for i in range(3)}
    pods = poll(lambda: running(cluster, namespace, name, hosts), 60, "3 pods Running")
    assert _env(pods[f"{name}-learner-2"])["RANK"] == "2"


def test_tf_config_survives_argo_templating(
    dijob_crd: None, cluster: client.ApiClient, namespace: str, poll: Any
) -> None:
    name = "tf"
    doc = job_doc(
        _task("none", 1, name="chief"),
        _task("none", 2, name="worker"),
        name=name,
    )
    for t in doc["spec"]["tasks"]:
        t["envProvider"] = {"name": "tensorflow"}
    start_doc(cluster, namespace, doc)
    hosts = {f"{name}-chief-0", f"{name}-worker-0", f"{name}-worker-1"}
    pods = poll(lambda: running(cluster, namespace, name, hosts), 60, "3 pods Running")
    env = _env(pods[f"{name}-worker-1"])
    assert env["DI_TF_CLUSTER"] == "<TF_CLUSTER>"
    # the kubelet splices $(DI_TF_CLUSTER) in; Argo has substituted the index and kept the JSON whole
    config = json.loads(env["TF_CONFIG"].replace("$(DI_TF_CLUSTER)", "{}"))
    assert config == {"cluster": {}, "task": {"type": "worker", "index": 1}}
    _, data = membership(cluster, namespace, name)
    assert sorted(json.loads(data["TF_CLUSTER"])) == ["chief", "worker"]
