"""The largest replica of a 2,000-replica job starts on the real node, with the whole DI_NODES.

The job is the worst case the names allow: 1 learner + 2,000 collectors + 1 evaluator, the longest
job name the hostname rule allows beside ``collector-1999`` (48 characters) and a 63-character
namespace. dihera renders it (its ConfigMap and Service are created as the controller creates them);
the largest replica's pod (``collector-1999``, rank 2000, the longest hostname) and rank 0's are made
from the rendered template, on the real node, from the project's image. The largest replica's process prints the
length and count of its ``DI_NODES`` and resolves rank 0's entry (a bare hostname, through the search
domain the template gives the pod) with ``dihera.peers``, as ``dihera wait-peers`` does. A pod given
the same list as FQDNs (what a job of this size got before) never starts: Linux refuses to exec it.

The same job scaled to 2,100 collectors (its membership planned as the scaler plans it): the long bare
hostnames would be 133,409 bytes, so the collectors that joined past what fits have short hostnames
``collector-<index>``. The largest replica's pod (``collector-2099``, rank 2101, a short hostname, from
the ``collector-short`` template) starts, reads all 2,102 entries and resolves rank 0 (a long hostname)
and itself.
"""

from __future__ import annotations

import json
import textwrap
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from ci.devcluster import realnode
from ci.devcluster.images import DIHERA_IMAGE, package_version
from ci.devcluster.settings import Settings
from dihera import RenderSettings, load_job, plan_membership, render
from dihera.constants import MAX_ENV_STRING
from dihera.env_limits import env_string_bytes
from dihera.naming import Addressing
from dihera.render import node_lists
from tests.builders import DIJobBuilder, TaskBuilder
from tests.integration.conftest import Poll
from tests.rendered import replica_template

pytestmark = [pytest.mark.cluster, pytest.mark.realnode]

COLLECTORS = 2000
JOB = "j" * (63 - len("-collector-1999"))  # 48: the longest the hostname rule allows here
SCRIPT = """
    import os, time
    from dihera.peers import parse_nodes, resolve_with_dns
    raw = os.environ["DI_NODES"]
    nodes, rank = parse_nodes(raw), int(os.environ["DI_RANK"])
    print("DI_NODES bytes", len(raw.encode()), "entries", len(nodes), "rank", rank, "own", nodes[rank], flush=True)
    assert nodes[rank] == os.uname().nodename, (nodes[rank], os.uname().nodename)
    for attempt in range(120):  # rank 0's record appears once its pod has an address
        try:
            resolve_with_dns(nodes[0])
            print("rank 0", nodes[0], "resolves", flush=True)
            break
        except OSError as err:
            time.sleep(0.5)
    else:
        raise SystemExit(f"rank 0 {nodes[0]} does not resolve: {err}")
    for attempt in range(120):  # so does its own, once this pod has its address
        try:
            resolve_with_dns(nodes[rank])
            print("own", nodes[rank], "resolves", flush=True)
            break
        except OSError as err:
            time.sleep(0.5)
    else:
        raise SystemExit(f"own {nodes[rank]} does not resolve: {err}")
"""


@pytest.fixture
def long_namespace(cluster: client.ApiClient, poll: Poll) -> Iterator[str]:
    """A namespace with the longest name Kubernetes allows (63 characters), its default account made."""
    core = client.CoreV1Api(cluster)
    name = f"dihera-test-{uuid.uuid4().hex[:8]}-".ljust(63, "n")
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    try:
        poll(lambda: core.list_namespaced_service_account(name).items, 30, f"service accounts in {name}")
        yield name
    finally:
        try:
            core.delete_namespace(name)
        except ApiException as err:
            if err.status != 404:
                raise


def manifest(namespace: str, collectors: int = COLLECTORS) -> dict[str, Any]:
    replicas = {"learner": 1, "collector": collectors, "evaluator": 1}
    tasks = [TaskBuilder(t).replicas(n).command("ditask") for t, n in replicas.items()]
    return DIJobBuilder(JOB).namespace(namespace).task(*tasks).obj()


def replica_pod(rendered: Any, dag_task: str, name: str, command: list[str]) -> dict[str, Any]:
    """The pod Argo would make for ``dag_task`` (its hostname, subdomain, dnsConfig, labels, env and
    membership volume from the rendered template), on the real node, running ``command`` from the
    project's image."""
    template = replica_template(rendered, dag_task)
    main = next(c for c in template["containerSet"]["containers"] if c["name"] == "main")
    image = f"{DIHERA_IMAGE}:{package_version(Settings.from_environ())}"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": template["metadata"]["labels"]},
        "spec": {
            **json.loads(template["podSpecPatch"]),
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 1,
            "nodeSelector": dict([realnode.NODE_LABEL]),
            "tolerations": [{**realnode.NODE_TAINT, "operator": "Equal"}],
            "containers": [
                {**main, "image": image, "imagePullPolicy": "Never", "command": command, "args": []},
            ],
            "volumes": template["volumes"],
        },
    }


def test_the_largest_replica_of_a_2000_replica_job_starts_with_the_whole_node_list(
    cluster: client.ApiClient, long_namespace: str, poll: Poll
) -> None:
    core = client.CoreV1Api(cluster)
    job = load_job(manifest(long_namespace))
    rendered = render(job, RenderSettings())
    nodes = rendered.configmap["data"]["DI_NODES"]
    assert len(nodes.split(",")) == COLLECTORS + 2 and env_string_bytes("DI_NODES", nodes) < MAX_ENV_STRING
    core.create_namespaced_config_map(long_namespace, rendered.configmap)
    core.create_namespaced_service(long_namespace, rendered.service)
    sleep = ["python3", "-c", "import time; time.sleep(120)"]
    core.create_namespaced_pod(long_namespace, replica_pod(rendered, "learner-0", "rank0", sleep))
    script = ["python3", "-u", "-c", textwrap.dedent(SCRIPT)]
    core.create_namespaced_pod(long_namespace, replica_pod(rendered, "collector-1999", "largest", script))

    # the same pod with the list as FQDNs, DI-orchestrator's form: 2,002 x ~190 bytes
    fqdns = node_lists(job, rendered.membership, RenderSettings(), Addressing.FQDN)["DI_NODES"]
    assert env_string_bytes("DI_NODES", fqdns) > MAX_ENV_STRING
    core.create_namespaced_config_map(long_namespace, {"metadata": {"name": "fqdns"}, "data": {"DI_NODES": fqdns}})
    too_long = replica_pod(rendered, "collector-1998", "fqdn-form", script)
    for e in too_long["spec"]["containers"][0]["env"]:
        if e["name"] == "DI_NODES":
            e["valueFrom"]["configMapKeyRef"]["name"] = "fqdns"
    core.create_namespaced_pod(long_namespace, too_long)

    def done(name: str) -> client.V1Pod | None:
        pod = core.read_namespaced_pod(name, long_namespace)
        return pod if pod.status.phase in ("Succeeded", "Failed") else None

    largest = poll(lambda: done("largest"), 180, "the largest replica's pod to finish")
    log = core.read_namespaced_pod_log("largest", long_namespace)
    print(f"[largest replica, {long_namespace}]\n{log}")
    assert largest.status.phase == "Succeeded", (largest.status, log)
    own = f"{JOB}-collector-1999"
    assert f"DI_NODES bytes {len(nodes)} entries {COLLECTORS + 2} rank {COLLECTORS} own {own}" in log
    assert f"rank 0 {JOB}-learner-0 resolves" in log and f"own {own} resolves" in log

    refused = poll(lambda: done("fqdn-form"), 180, "the FQDN-form pod to fail")
    state = refused.status.container_statuses[0].state.terminated
    said = core.read_namespaced_pod_log("fqdn-form", long_namespace)  # runc's exec error, not the script's
    print(f"[FQDN form, DI_NODES {len(fqdns)} bytes] {state.reason}, exit {state.exit_code}: {state.message} {said}")
    assert refused.status.phase == "Failed" and "DI_NODES bytes" not in said
    assert "argument list too long" in f"{state.message} {said}"


def test_the_largest_replica_of_the_job_scaled_to_2100_starts_with_a_short_hostname(
    cluster: client.ApiClient, long_namespace: str, poll: Poll
) -> None:
    core = client.CoreV1Api(cluster)
    grown = 2100
    job = load_job(manifest(long_namespace, grown))
    first = plan_membership(load_job(manifest(long_namespace)), None)
    membership = plan_membership(job, first)  # the 100 collectors joined by a scale-up, as the scaler plans them
    largest = max(membership.replicas, key=lambda r: r.rank)
    assert (largest.rank, largest.task, largest.index, largest.short) == (grown + 1, "collector", grown - 1, True)
    short = [r for r in membership.replicas if r.short]
    rendered = render(job, RenderSettings(), membership)
    nodes = rendered.configmap["data"]["DI_NODES"]
    print(
        f"[1+{grown}+1, job name {len(JOB)}, namespace {len(long_namespace)}] DI_NODES {len(nodes.encode())} bytes, "
        f"{len(short)} short hostnames (collector-{short[0].index}..collector-{short[-1].index})"
    )
    assert len(nodes.split(",")) == grown + 2 and env_string_bytes("DI_NODES", nodes) < MAX_ENV_STRING
    core.create_namespaced_config_map(long_namespace, rendered.configmap)
    core.create_namespaced_service(long_namespace, rendered.service)
    sleep = ["python3", "-c", "import time; time.sleep(120)"]
    core.create_namespaced_pod(long_namespace, replica_pod(rendered, "learner-0", "rank0", sleep))
    script = ["python3", "-u", "-c", textwrap.dedent(SCRIPT)]
    pod = replica_pod(rendered, f"collector-{grown - 1}", "largest", script)
    assert pod["spec"]["hostname"] == f"collector-{grown - 1}"
    assert pod["metadata"]["labels"]["diengine/pod"] == f"{JOB}-collector-{grown - 1}"
    core.create_namespaced_pod(long_namespace, pod)

    def done(name: str) -> client.V1Pod | None:
        pod = core.read_namespaced_pod(name, long_namespace)
        return pod if pod.status.phase in ("Succeeded", "Failed") else None

    finished = poll(lambda: done("largest"), 180, "the largest replica's pod to finish")
    log = core.read_namespaced_pod_log("largest", long_namespace)
    print(f"[largest replica, short hostname, {long_namespace}]\n{log}")
    assert finished.status.phase == "Succeeded", (finished.status, log)
    own = f"collector-{grown - 1}"
    assert f"DI_NODES bytes {len(nodes)} entries {grown + 2} rank {grown + 1} own {own}" in log
    assert f"rank 0 {JOB}-learner-0 resolves" in log and f"own {own} resolves" in log
