"""Env providers for real (issue 16): DIJobs of workflows/ on the real node, through the controller and Argo.

- torch: workflows/torch-allreduce.yaml, a learner task of 2 replicas with the torch provider, runs a
  gloo all-reduce across its two pods through the injected MASTER_ADDR/PORT, WORLD_SIZE and RANK (the
  DI-engine image, which has torch);
- tensorflow: workflows/tf-config-check.yaml (chief, 2 workers, ps) on the Debian + Python image: each
  pod parses the TF_CONFIG we render, checks its own entry and resolves every address in it.
"""

from __future__ import annotations

import json
import re

import pytest
from kubernetes import client

from ci.devcluster import realnode
from ci.devcluster.images import PYTHON_IMAGE
from dihera.kube.jobs import JobStore
from tests.integration.controllers import Controller
from tests.integration.jobs import job_pods
from tests.integration.realjobs import exit_codes, follow, job_logs, on_real_node, own_lines

pytestmark = [pytest.mark.cluster, pytest.mark.realnode]

ALLREDUCE = re.compile(r"^rank (\d+)/(\d+): all_reduce sum ([\d.]+) \(expected ([\d.]+)\)$")


def check_pods_succeeded(cluster: client.ApiClient, namespace: str, name: str, count: int) -> None:
    pods = job_pods(cluster, namespace, name)
    assert len(pods) == count, [p["metadata"]["name"] for p in pods]
    for pod in pods:
        assert pod["spec"]["nodeName"] == realnode.NODE_NAME, pod["metadata"]["name"]
        assert pod["status"]["phase"] == "Succeeded", (pod["metadata"]["name"], pod["status"])
        codes = exit_codes(pod)
        assert codes and all(code == 0 for code in codes.values()), (pod["metadata"]["name"], codes)


def test_torch_allreduce_dijob_succeeds_on_the_real_node(
    ding_image: str,
    controller: Controller,
    cluster: client.ApiClient,
    namespace: str,
) -> None:
    doc = on_real_node("torch-allreduce.yaml", namespace, ding_image, cluster)
    JobStore(cluster).create(doc)
    run = follow(cluster, namespace, "torch-allreduce", timeout=300)
    assert run.status["phase"] == "Succeeded", (run.phases, run.status, job_logs(cluster, namespace, "torch-allreduce"))
    check_pods_succeeded(cluster, namespace, "torch-allreduce", 2)

    results = {}
    for pod, log in job_logs(cluster, namespace, "torch-allreduce").items():
        matches = [m for line in own_lines(log) if (m := ALLREDUCE.match(line))]
        assert len(matches) == 1, (pod, log)
        rank, world, got, expected = matches[0].groups()
        results[int(rank)] = (int(world), float(got), float(expected))
        env_line = next(line for line in own_lines(log) if line.startswith("torch env:"))
        assert f"'RANK': '{rank}'" in env_line and "'WORLD_SIZE': '2'" in env_line, env_line
    # Both ranks of one process group, each seeing the sum of 1 + 2 that every rank agreed on.
    assert results == {0: (2, 3.0, 3.0), 1: (2, 3.0, 3.0)}, results


def test_tf_config_pods_parse_and_resolve_their_cluster_on_the_real_node(
    controller: Controller,
    cluster: client.ApiClient,
    namespace: str,
) -> None:
    doc = on_real_node("tf-config-check.yaml", namespace, PYTHON_IMAGE, cluster)
    JobStore(cluster).create(doc)
    run = follow(cluster, namespace, "tf-config-check", timeout=240)
    assert run.status["phase"] == "Succeeded", (run.phases, run.status, job_logs(cluster, namespace, "tf-config-check"))
    check_pods_succeeded(cluster, namespace, "tf-config-check", 4)

    domain = f"di-tf-config-check.{namespace}.svc.cluster.local"
    expected_cluster = {
        "chief": [f"tf-config-check-chief-0.{domain}:2222"],
        "worker": [f"tf-config-check-worker-{i}.{domain}:2222" for i in (0, 1)],
        "ps": [f"tf-config-check-ps-0.{domain}:2222"],
    }
    tasks = []
    logs = job_logs(cluster, namespace, "tf-config-check")
    for pod in job_pods(cluster, namespace, "tf-config-check"):
        log = logs[pod["metadata"]["name"]]
        lines = own_lines(log)
        config = json.loads(next(line for line in lines if line.startswith("TF_CONFIG:")).split(":", 1)[1])
        assert config["cluster"] == expected_cluster, config
        host = pod["spec"]["hostname"]  # tf-config-check-<task>-<index>
        assert host == f"tf-config-check-{config['task']['type']}-{config['task']['index']}", (host, config)
        assert "all 4 addresses resolve" in lines, log
        tasks.append((config["task"]["type"], config["task"]["index"]))
    assert sorted(tasks) == [("chief", 0), ("ps", 0), ("worker", 0), ("worker", 1)]
