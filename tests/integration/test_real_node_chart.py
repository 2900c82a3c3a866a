"""The chart for real: the image built from the Dockerfile runs the controller and the di-server on the
real node (probes really served), and a DIJob runs through them to Succeeded on that node with Argo's
real executor (init and wait containers).

Named to run after test_controller_*: right after this release's controller really ran, their timing-
sensitive check that a job's first condition is Pending failed (the first status already said Running).

The release is installed like test_chart_install's (own name and namespace, CRDs taken over and restored
afterwards) with charts/dihera/ci/realnode-values.yaml: the local image, never pulled, and the real
node's selector and toleration; its namespace enforces the ``restricted`` Pod Security Standard, as the local
control plane's dihera-system does (issue 42): a pod of the chart that did not meet it would not be created.
It watches one namespace of its own, where the chart's executor and reporter
RoleBindings are all Argo's init and wait containers and the job's own process get (the job's pods run as
`default`): the process reports into its DIJob's status through the di-server, and its scale-up is refused.

A body of 300 MB without a token, streamed to the di-server's pod through a port-forward, is answered 401 (or 413)
and leaves the pod Running, not restarted, its cgroup's memory peak far under its limit (issue 57: the body is
refused before a byte of it is read).

The di-server's pod is deleted, and a scale request sent at once through the port-forward `make demo`
uses (ci/demo.py: started again whenever it ends): the request is answered, by the old pod or by the new
one after `dihera scale --server` sent it again with its Idempotency-Key, the job is scaled once, and the
URL answers again with the new pod.

A sweep runs through the same release (one install for both): `dihera experiment submit` creates the sweep's
Workflow; its trial nodes create DIJobs (Argo resource templates) that run on the real node through the
chart's controller, report their metric and its history to the chart's di-server (``POST .../profilings``,
with their ServiceAccount's token); the early-stopping daemon suspends the hopeless ones; the summary node
(dihera's image) reads the trials back and outputs the results table and the best values, and stores the
tables and its plot of every trial's return over iterations (SVG) in the local control plane's object store
(argo server serves them; the browser finds the plot on the summary node). Each trial's "training" is 20
one-second iterations whose return climbs to ``100 · (1 - lr) + seed``, so the best is known (lr 0.01: mean
99.5 over seeds 0 and 1, 95 % interval ± 6.353), and the lr 0.5 trials, run after the lr 0.01 ones
(parallelism 2), fall out of the best third at a rung of successive halving (4 and 12 iterations); trial 1 (lr
0.01, seed 1) reports, then exits 1: a failed trial does not stop the sweep. Then the example itself,
workflows/python/cartpole_sweep.py: four real CartPole DQN trainings (in the DI-engine image built here), two
at a time, the hopeless learning rate stopped early.
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from kubernetes import client
from kubernetes.utils import parse_quantity

from ci.demo import supervised_forward
from ci.devcluster import Cluster, realnode
from ci.devcluster.images import PYTHON_IMAGE, package_version
from ci.devcluster.manifests import RESTRICTED
from ci.devcluster.settings import Settings
from dihera.constants import LABEL_TRIAL_POD, PEER_WAIT_CONTAINER
from dihera.kube.experiments import read_workflow
from dihera.kube.jobs import JobStore
from dihera.kube.objects import WORKFLOW_GROUP, WORKFLOW_PLURAL, WORKFLOW_VERSION
from dihera.schema import GROUP, PLURAL, VERSION
from dihera.server import ServerSettings
from tests.chart.helm import CHART
from tests.integration.argo_ui import (
    browser_page,
    click_graph_node,
    expect_text,
    follow_link,
    graph_labels,
    graph_node_id,
    graph_node_ids,
    screenshot,
    wait_for,
)
from tests.integration.autoscaled import (
    FAST_BEHAVIOR,
    STOP,
    TARGET_WAIT,
    Watch,
    autoscaled_cartpole,
    scale_events,
)
from tests.integration.conftest import Poll
from tests.integration.controllers import DIHERA, free_port
from tests.integration.jobs import manifest, phase_is
from tests.integration.realjobs import ON_REAL_NODE, follow, on_real_node
from tests.integration.releases import DIJOB_CRD, TIMEOUT, Release, read_crd, restore_crds
from tests.integration.servers import (
    REPORT_RULE,
    argo_ui_config,
    local_tls,
    long_task,
    membership,
    running_server,
    sa_token,
    spec_replicas,
)

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
            # the own-objects admission policy (on by default only cluster-wide): the real components under it
            "--set", "admissionPolicy.ownObjectsOnly=true",
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


#: The real job's process: its FQDN and rank, then, with its pod's token (ServiceAccount ``default``: the chart's
#: executor and reporter RoleBindings only), a report and a scale-up through the chart's di-server: their statuses.
REAL_JOB = """
import json, os, ssl, urllib.error, urllib.request
print(os.environ["DI_FQDN"], os.environ["DI_RANK"], flush=True)
ca = os.environ.get("DI_SERVER_CA")
trust = ssl.create_default_context(cadata=ca) if ca else None
token = open("/var/run/secrets/kubernetes.io/serviceaccount/token").read()
base = f"{os.environ['DI_SERVER_URL']}/v2alpha1/job/{os.environ['DI_JOB_ID'].replace('/', '.', 1)}"
def post(path, body):
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    request = urllib.request.Request(base + path, json.dumps(body).encode(), headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=20, context=trust) as answer:
            return answer.status
    except urllib.error.HTTPError as err:
        return err.code
print("report", post("/profilings", {"probe": 1}), "scale", post("/replicas", {"replicas": 1}), flush=True)
"""


def real_job(name: str) -> dict[str, Any]:
    container = {
        "name": "di-container",
        "image": PYTHON_IMAGE,
        "imagePullPolicy": "Never",
        "command": ["python3", "-c", REAL_JOB],
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
        # the pod's report got through, its scale-up did not (issue 57: the reporter role, nothing more)
        assert own == [f"real-serial-0.di-real.{namespace}.svc.cluster.local 0", "report 200 scale 403"], log
    assert status.get("profilings") == {"probe": 1}, status


def ready(url: str, context: ssl.SSLContext | None = None) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/readyz", timeout=2, context=context) as rsp:
            return bool(rsp.status == 200)
    except OSError:
        return False


def server_pod(cluster: client.ApiClient, release: Release) -> client.V1Pod | None:
    """The release's di-server pod that is Running, ready and not being deleted, if there is one."""
    for pod in component_pods(cluster, release):
        statuses = pod.status.container_statuses or []
        if (
            pod.metadata.labels["app.kubernetes.io/component"] == "server"
            and pod.metadata.deletion_timestamp is None
            and statuses
            and all(c.ready for c in statuses)
        ):
            return pod
    return None


def published_ca(cluster: client.ApiClient, release: Release, token: str, path: Path) -> Path:
    """The release's CA as any authenticated user reads it (``token``: an account with no rights in the release's
    namespace but the chart's binding of ``system:authenticated``): ConfigMap ``<release>-server-ca``."""
    config = client.Configuration()
    config.host, config.ssl_ca_cert = cluster.configuration.host, cluster.configuration.ssl_ca_cert
    config.api_key = {"authorization": f"Bearer {token}"}
    with client.ApiClient(config) as api:
        data = client.CoreV1Api(api).read_namespaced_config_map(f"{release.name}-server-ca", release.namespace).data
    path.write_text(data["ca.crt"])
    return path


def curl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["curl", "-sS", "--max-time", "10", *args], capture_output=True, text=True, check=False)


#: The server container's cgroup memory (v2: memory.peak and memory.current; v1: their older names; a kernel
#: before 5.19 has no memory.peak: the current usage stands in), in bytes.
CGROUP_MEMORY = """
import json, os
def read(*names):
    for name in names:
        for base in ("/sys/fs/cgroup", "/sys/fs/cgroup/memory"):
            if os.path.exists(os.path.join(base, name)):
                return int(open(os.path.join(base, name)).read().split()[0])
current = read("memory.current", "memory.usage_in_bytes")
print(json.dumps({"peak": read("memory.peak", "memory.max_usage_in_bytes") or current, "current": current}))
"""
MiB = 1024 * 1024


def cgroup_memory(kubeconfig: Path, pod: client.V1Pod) -> dict[str, int]:
    """The di-server container's cgroup memory (kubectl exec), in bytes: ``peak`` since it started, ``current``."""
    argv = ["kubectl", f"--kubeconfig={kubeconfig}", "exec", "-n", pod.metadata.namespace, pod.metadata.name,
            "-c", "server", "--", "python", "-c", CGROUP_MEMORY]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 0, done.stderr
    found: dict[str, int] = json.loads(done.stdout)
    assert found["peak"] and found["current"], found
    return found


def stream_without_token(port: int, trust: ssl.SSLContext, size: int) -> tuple[bytes, int]:
    """PUT ``size`` bytes (Content-Length) with no token to the di-server at 127.0.0.1:``port``, sent 1 MiB at a
    time until an answer is waiting or the connection is closed: the answer's first bytes, and the bytes sent."""
    path = "/v1/namespaces/anywhere/dijobs/anything/tasks/collector/replicas"
    head = f"PUT {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {size}\r\n\r\n"
    chunk, sent, answer = b"1" * MiB, 0, b""
    with (
        socket.create_connection(("127.0.0.1", port), timeout=60) as raw,
        trust.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        tls.sendall(head.encode())
        try:
            while sent < size and not select.select([tls], [], [], 0)[0] and not tls.pending():
                tls.sendall(chunk)
                sent += len(chunk)
        except OSError:  # the server answered and closed: the rest is never sent
            pass
        try:
            while not _whole(answer) and (data := tls.recv(4096)):
                answer += data
        except OSError:  # closed after the answer (or reset): what came is kept
            pass
    return answer, sent


def _whole(answer: bytes) -> bool:
    """Whether ``answer`` holds an HTTP answer's head and its ``Content-Length`` of body (or 64 KiB)."""
    head, found, body = answer.partition(b"\r\n\r\n")
    length = re.search(rb"(?im)^content-length:\s*(\d+)", head)
    return len(answer) > 65536 or bool(found and length and len(body) >= int(length[1]))


def test_300_mb_without_a_token_leaves_the_di_server_running_under_its_limit(
    real_release: Release, cluster: client.ApiClient, kubeconfig: Path, jobs_namespace: str, poll: Poll, tmp_path: Path
) -> None:
    """An attacker's body to the chart's di-server pod (issue 57): answered 401 or 413, the pod neither restarted
    nor near its memory limit (its cgroup's peak grows by a few MiB, not by the body's 300)."""
    token = sa_token(cluster, jobs_namespace, "prober", None)  # only to read the published CA
    trust = ssl.create_default_context(cafile=str(published_ca(cluster, real_release, token, tmp_path / "ca.crt")))
    port = free_port()
    service = f"{real_release.name}-server"
    forward = supervised_forward(str(kubeconfig), real_release.namespace, service, port, tmp_path / "forward.log")
    try:
        poll(lambda: ready(f"https://127.0.0.1:{port}", trust), 60, "the di-server through the port-forward")
        pod = server_pod(cluster, real_release)
        assert pod is not None
        container = next(c for c in pod.spec.containers if c.name == "server")
        limit = int(parse_quantity(container.resources.limits["memory"]))
        restarts = {c.name: c.restart_count for c in pod.status.container_statuses}
        before = cgroup_memory(kubeconfig, pod)
        answer, sent = stream_without_token(port, trust, 300 * MiB)
        time.sleep(2)  # an OOM kill, had there been one, is in the pod's status by now
        after = cgroup_memory(kubeconfig, pod)
        now = client.CoreV1Api(cluster).read_namespaced_pod(pod.metadata.name, pod.metadata.namespace)
    finally:
        os.killpg(forward.pid, signal.SIGTERM)
        forward.wait(10)
    print(f"300 MB without a token: {answer[:40]!r}, {sent / MiB:.0f} MiB sent; the di-server's cgroup peak "
          f"{before['peak'] / MiB:.1f} → {after['peak'] / MiB:.1f} MiB (now {after['current'] / MiB:.1f} MiB, limit "
          f"{limit / MiB:.0f} MiB)")  # fmt: skip
    assert answer.startswith((b"HTTP/1.1 401", b"HTTP/1.1 413")), (answer, (tmp_path / "forward.log").read_text())
    assert now.status.phase == "Running"
    assert {c.name: c.restart_count for c in now.status.container_statuses} == restarts
    assert after["peak"] < limit and after["peak"] - before["peak"] < 32 * MiB, (before, after, limit)


def test_the_di_servers_pod_replaced_mid_request_scales_once_through_a_forward_that_outlives_it(
    real_release: Release, cluster: client.ApiClient, kubeconfig: Path, jobs_namespace: str, poll: Poll, tmp_path: Path
) -> None:
    """Also the chart's HTTPS (issue 42): the CLI trusts the published CA, refuses the server without it (nothing
    changes), and plain HTTP gets no answer."""
    namespace, name = jobs_namespace, "replaced"
    jobs = JobStore(cluster)
    jobs.create(manifest(name, namespace, long_task("learner", 1), long_task("collector", 1), maxReplicas=4))
    token = sa_token(cluster, namespace, "scaler", ["get", "patch"])
    ca = published_ca(cluster, real_release, token, tmp_path / "ca.crt")
    trust = ssl.create_default_context(cafile=str(ca))
    port = free_port()
    url = f"https://127.0.0.1:{port}"
    service = f"{real_release.name}-server"
    forward = supervised_forward(str(kubeconfig), real_release.namespace, service, port, tmp_path / "forward.log")
    scale = [DIHERA, "scale", f"{namespace}/{name}", "--task", "collector", "--add", "1", "--server", url,
             "--token", token]  # fmt: skip
    try:
        poll(phase_is(jobs, namespace, name, "Running"), 120, f"DIJob {name} Running")
        poll(lambda: ready(url, trust), 60, "the di-server through the port-forward")
        generation = membership(cluster, namespace, name)[0].generation
        # without the CA: refused at once, nothing sent; plain HTTP: no answer; curl with the CA: answered
        untrusted = subprocess.run([*scale, "--retry-seconds", "30"], capture_output=True, text=True, timeout=60)
        assert untrusted.returncode == 1 and "its certificate is not trusted" in untrusted.stderr, untrusted.stderr
        plain = curl(f"http://127.0.0.1:{port}/readyz")
        assert plain.returncode != 0 and not plain.stdout, (plain.returncode, plain.stdout, plain.stderr)
        assert curl("--cacert", str(ca), f"{url}/readyz").returncode == 0
        assert curl(f"{url}/readyz").returncode == 60  # curl's "peer certificate cannot be authenticated"
        assert membership(cluster, namespace, name)[0].generation == generation  # the refused scale did nothing
        old = server_pod(cluster, real_release)
        assert old is not None
        client.CoreV1Api(cluster).delete_namespaced_pod(old.metadata.name, real_release.namespace)
        t = time.monotonic()
        cli = subprocess.run(
            [*scale, "--ca-file", str(ca), "--retry-seconds", "120"], capture_output=True, text=True, timeout=180
        )
        answered = time.monotonic() - t
        new = poll(lambda: server_pod(cluster, real_release), 120, "a new di-server pod, ready")
        poll(lambda: ready(url, trust), 60, "the same URL to answer again, through the new pod")
        again = time.monotonic() - t
        scaled = (membership(cluster, namespace, name)[0].generation, spec_replicas(cluster, namespace, name))
    finally:
        os.killpg(forward.pid, signal.SIGTERM)
        forward.wait(10)
        jobs.delete(namespace, name)
        poll(lambda: jobs.get(namespace, name) is None, 90, f"DIJob {name} to be deleted")
    print(f"pod {old.metadata.name} deleted: the scale answered after {answered:.1f}s, the URL through "
          f"{new.metadata.name} after {again:.1f}s; the CLI's stderr: {cli.stderr.strip() or '-'}")  # fmt: skip
    assert new.metadata.name != old.metadata.name
    assert cli.returncode == 0, (cli.stdout, cli.stderr, (tmp_path / "forward.log").read_text()[-2000:])
    assert json.loads(cli.stdout)["changed"] is True
    assert scaled[0] == generation + 1 and scaled[1]["collector"] == 2, scaled  # scaled once


ACCOUNT = "sweeper"
#: What the experiment's pods (the trials' creators, the summary) and the trials' replicas do with it.
RULES = [
    {"apiGroups": [GROUP], "resources": [PLURAL], "verbs": ["create", "get", "list", "watch", "patch"]},
    REPORT_RULE,  # the trials' replicas report their metric and checkpoints
    {"apiGroups": ["argoproj.io"], "resources": ["workflowtaskresults"], "verbs": ["create", "patch"]},
]
ITERATIONS = 20
TRAIN = """
import json, os, ssl, sys, time, urllib.request
lr, seed = float(os.environ["DIHERA_PARAM_LR"]), int(os.environ["DIHERA_SEED"])
trust = ssl.create_default_context(cadata=os.environ["DI_SERVER_CA"])  # the chart's CA, from its controller
token = open("/var/run/secrets/kubernetes.io/serviceaccount/token").read()
url = f"{os.environ['DI_SERVER_URL']}/v2alpha1/job/{os.environ['DI_JOB_ID'].replace('/', '.', 1)}/profilings"
headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
history = []
for it in range(1, ITERATIONS + 1):  # a "training" whose return climbs to 100 * (1 - lr) + seed
    history.append([it, (100 * (1 - lr) + seed) * it / ITERATIONS])
    body = json.dumps({"evalReturn": history[-1][1], "evalReturnHistory": history}).encode()
    urllib.request.urlopen(urllib.request.Request(url, body, headers, method="POST"), timeout=20, context=trust).read()
    print("reported", it, flush=True)
    time.sleep(1)
sys.exit(1 if os.environ["DIHERA_TRIAL"] == "1" else 0)
""".replace("ITERATIONS", str(ITERATIONS))
SWEEP = """
from dihera import experiment as ex
container = {{"name": "main", "image": {image!r}, "imagePullPolicy": "Never", "command": ["python3", "-c", {train!r}]}}
spec = {{"containers": [container], "serviceAccountName": {account!r}, "restartPolicy": "Never", **{placement!r}}}
job = ex.dijob("probe", [ex.task("learner", template={{"spec": spec}})], namespace={namespace!r},
               backoffLimit=0, cleanPodPolicy="None")
experiment = ex.sweep("probe-sweep", job, {{"lr": ex.choice(0.01, 0.5)}}, seeds=[0, 1], parallelism=2,
                      image={dihera!r}, service_account={account!r},
                      node_selector={placement[nodeSelector]!r}, tolerations={placement[tolerations]!r},
                      early_stopping=ex.successive_halving(min_iterations=4, reduction=3, min_trials=2),
                      artifacts=True)
"""


def _account(cluster: client.ApiClient, namespace: str, name: str = ACCOUNT) -> None:
    rbac = client.RbacAuthorizationV1Api(cluster)
    client.CoreV1Api(cluster).create_namespaced_service_account(namespace, {"metadata": {"name": name}})
    rbac.create_namespaced_role(namespace, {"metadata": {"name": name}, "rules": RULES})
    rbac.create_namespaced_role_binding(namespace, {
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
    })  # fmt: skip


def _overlap(intervals: list[tuple[str, str]]) -> int:
    """The most intervals open at one moment (ISO times; an end before an equal start)."""
    edges = sorted([(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals], key=lambda x: (x[0], x[1]))
    live = most = 0
    for _, step in edges:
        live += step
        most = max(most, live)
    return most


def _sweep_in_the_argo_ui(cluster: client.ApiClient, namespace: str, server_kubeconfig: Path, summary: str) -> str:
    """The experiment in a real browser: its graph labels the trial nodes with their values (the middle two
    of four siblings folded), and the first trial's pod link opens its DIJob's view in a di-server on the
    port Argo's links name (anonymous views, serving the sweep's namespace); the summary node's outputs list
    the plot, whose link opens it: the SVG the browser shows."""
    dev = Cluster(Settings.from_environ())
    argo_url = dev.argo_ui_url()
    assert argo_url, "the local control plane's default pair runs the Argo UI"
    port = urlsplit(argo_ui_config(cluster)["links"][0]["url"]).port
    settings = ServerSettings(namespaces=(namespace,), anonymous_views=True, auth_cache_seconds=0.0)
    with running_server(settings, server_kubeconfig, port or 0, local_tls()) as ui_server, browser_page() as page:
        page.goto(f"{argo_url}/workflows/{namespace}/probe-sweep")
        first, last = "t00-lr-0p01-s0", "t03-lr-0p5-s1"
        wait_for(page, lambda: {first, last} <= graph_labels(page) or None, "the first and last trial nodes")
        screenshot(page, dev.state.screenshots, "sweep-graph")
        node = graph_node_id(page, first)
        assert node and click_graph_node(page, node), graph_node_ids(page)
        view = follow_link(page, "Trial DIJob (di-server)")
        assert view.url == f"{ui_server}/ui/namespaces/{namespace}/dijobs/probe-sweep-t00", view.url
        expect_text(view, [f"DIJob {namespace}/probe-sweep-t00", "Succeeded"], "the trial DIJob's view")
        view.close()
        # the Workflow's link opens the sweep's view: progress, the best so far, a link to each trial's DIJob
        sweep_view = follow_link(page, "DIJob or sweep (di-server)")
        experiment_url = f"{ui_server}/ui/namespaces/{namespace}/experiments/probe-sweep?"
        assert sweep_view.url.startswith(experiment_url), sweep_view.url
        progress = "1 done, 0 running, 1 failed, 2 stopped, 0 waiting of 4"
        expect_text(sweep_view, [f"Sweep {namespace}/probe-sweep", progress, '{"lr": 0.01}'], "the sweep's view")
        screenshot(sweep_view, dev.state.screenshots, "sweep-view")
        sweep_view.locator("a[href='../dijobs/probe-sweep-t03']").click()
        expect_text(sweep_view, [f"DIJob {namespace}/probe-sweep-t03", "Suspended"], "trial 3's view from the sweep's")
        sweep_view.close()
        assert click_graph_node(page, summary), graph_node_ids(page)
        page.get_by_text("INPUTS/OUTPUTS", exact=True).first.click()
        link = page.locator("a[href*='/outputs/plot']").first
        wait_for(page, lambda: link.is_visible() or None, "the plot artifact's link on the summary node")
        href = link.get_attribute("href") or ""
        page.goto(href if href.startswith("http") else f"{argo_url}/{href.lstrip('/')}")
        wait_for(page, lambda: page.locator("polyline").count() or None, "the plot's lines in the browser")
        screenshot(page, dev.state.screenshots, "sweep-plot")
        return page.content()


def _expect_plot(svg: str, jobs: dict[str, dict[str, Any]]) -> None:
    """One line per trial, as many points as its DIJob's history, dashed when early stopping stopped it."""
    import xml.etree.ElementTree as ET

    lines = {e.get("data-trial"): e for e in ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}polyline")}
    for name, job in jobs.items():
        line = lines[job["metadata"]["labels"]["diengine/trial"]]
        history = job["status"]["profilings"]["evalReturnHistory"]
        assert len((line.get("points") or "").split()) == len(history) == int(line.get("data-points") or 0), name
        stopped = "diengine/stopped" in job["metadata"].get("annotations", {})
        assert (line.get("stroke-dasharray") == "6 4") == stopped, (name, line.attrib)
    assert len(lines) == len(jobs), sorted(lines)


def test_a_sweep_runs_each_trial_as_a_dijob_and_ranks_them(
    real_release: Release, jobs_namespace: str, cluster: client.ApiClient, kubeconfig: Path, poll: Poll,
    tmp_path: Path, server_kubeconfig: Path,
) -> None:  # fmt: skip
    namespace = jobs_namespace
    _account(cluster, namespace)
    file = tmp_path / "sweep.py"
    tag = package_version(Settings.from_environ())
    file.write_text(SWEEP.format(
        image=f"dihera.local/dihera:{tag}", dihera=f"dihera.local/dihera:{tag}", train=TRAIN, account=ACCOUNT,
        namespace=namespace, placement=ON_REAL_NODE,
    ))  # fmt: skip
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    run = subprocess.run(
        [sys.executable, "-m", "dihera", "experiment", "submit", str(file), "--wait", "--timeout", "300"],
        env=env, capture_output=True, text=True, timeout=330,
    )  # fmt: skip
    wf = read_workflow(cluster, namespace, "probe-sweep")
    nodes = wf["status"].get("nodes", {})
    failed = {n["displayName"]: n.get("message") for n in nodes.values() if n["phase"] in ("Failed", "Error")}
    assert run.returncode == 0 and wf["status"]["phase"] == "Succeeded", (run.stdout[-2000:], run.stderr[-999:], failed)
    assert "trials 1 done, 0 running, 1 failed, 2 stopped, 0 waiting of 4" in run.stdout, run.stdout

    jobs = client.CustomObjectsApi(cluster).list_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, label_selector="diengine/experiment=probe-sweep"
    )["items"]
    by_name = {j["metadata"]["name"]: j for j in jobs}
    assert sorted(by_name) == [f"probe-sweep-t0{i}" for i in range(4)], sorted(by_name)
    expected = {0: (0.01, 0, "Succeeded"), 1: (0.01, 1, "Failed"), 2: (0.5, 0, "Suspended"), 3: (0.5, 1, "Suspended")}
    for i, (lr, seed, phase) in expected.items():
        job = by_name[f"probe-sweep-t0{i}"]
        env_vars = {e["name"]: e["value"] for e in job["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["env"]}
        assert env_vars == {"DIHERA_PARAM_LR": repr(lr), "DIHERA_SEED": str(seed), "DIHERA_TRIAL": str(i)}, env_vars
        assert job["status"]["phase"] == phase, (i, job["status"])
        history = job["status"]["profilings"]["evalReturnHistory"]
        climbed = (100 * (1 - lr) + seed) * len(history) / ITERATIONS
        assert job["status"]["profilings"]["evalReturn"] == history[-1][1] == climbed, job["status"]
        (owner,) = job["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["name"], owner["uid"]) == ("Workflow", "probe-sweep", wf["metadata"]["uid"])
        if phase == "Suspended":  # early stopping: past min_iterations, well before the trial's budget
            reason = job["metadata"]["annotations"]["diengine/stopped"]
            assert re.match("successive halving at rung (4|12): best evalReturn ", reason), reason
            assert 4 <= len(history) < ITERATIONS, (i, len(history), reason)
        else:
            assert len(history) == ITERATIONS, (i, history)
    # parallelism 2 (the early-stopping daemon aside): never more than two trials alive at once, and two were
    trial_nodes = [n for n in nodes.values() if n.get("templateName") == "trial"]
    assert _overlap([(n["startedAt"], n["finishedAt"]) for n in trial_nodes]) == 2, trial_nodes
    # each trial node labelled with its values and seed, its outputs the DIJob's phase and metric
    shown = {n["displayName"]: {p["name"]: p["value"] for p in n["outputs"].get("parameters", [])} for n in trial_nodes}
    out = shown.get("t00-lr-0p01-s0") or {}
    assert out.get("phase") == "Succeeded" and float(out.get("evalReturn") or "nan") == 99.0, shown
    failed_trials = sorted(n["displayName"] for n in trial_nodes if n["phase"] == "Failed")
    assert failed_trials == ["t01-lr-0p01-s1", "t02-lr-0p5-s0", "t03-lr-0p5-s1"], failed_trials
    assert all("failure condition" in n["message"] for n in trial_nodes if n["phase"] == "Failed"), trial_nodes
    (stopper,) = [n for n in nodes.values() if n.get("templateName") == "early-stopping"]
    core = client.CoreV1Api(cluster)
    (pod,) = [p for p in core.list_namespaced_pod(namespace).items
              if (p.metadata.annotations or {}).get("workflows.argoproj.io/node-name") == stopper["name"]]  # fmt: skip
    log = core.read_namespaced_pod_log(pod.metadata.name, namespace, container="main")
    assert sorted(line.split(":")[0] for line in log.splitlines() if line.startswith("stopped ")) == [
        "stopped probe-sweep-t02",
        "stopped probe-sweep-t03",
    ], log

    # each trial's DIJob is labelled with the name of the pod that created it (Argo's {{pod.name}}), which the
    # Argo UI's pod link on the trial node names (test_argo_ui_links follows that link to the di-server)
    creators = {(p.metadata.annotations or {}).get("workflows.argoproj.io/node-name"): p.metadata.name
                for p in core.list_namespaced_pod(namespace).items}  # fmt: skip
    for n in trial_nodes:
        job_of_node = {p["name"]: p["value"] for p in n["inputs"]["parameters"]}["job"]
        assert by_name[job_of_node]["metadata"]["labels"][LABEL_TRIAL_POD] == creators[n["name"]], (n, creators)

    stopped = [line for line in log.splitlines() if line.startswith("stopped ")]
    print(f"\n[sweep] {wf['status']['startedAt']} .. {wf['status']['finishedAt']}; " + "; ".join(stopped))
    (summary,) = [n for n in nodes.values() if n.get("templateName") == "summary"]
    outputs = {p["name"]: p["value"] for p in summary["outputs"]["parameters"]}
    best = json.loads(outputs["best"])
    assert best["values"] == {"lr": 0.01} and best["evalReturn"] == 99.5, best
    assert abs(best["halfWidth"] - 6.353) < 1e-3 and best["seeds"] == 2, best
    table = outputs["results"]
    assert "| 1 | 0.01 | 1 | 100 | Failed |" in table and "| 0.01 | 2/2 | 99.5 | 93.15 .. 105.9 |" in table, table
    assert "| 2 | 0.5 | 0 |" in table and "| Stopped |" in table, table
    assert outputs["results-csv"].splitlines()[0] == "trial,job,lr,seed,evalReturn,phase,seconds", outputs

    # the summary's plot and tables in the object store: the tables are the outputs above; the plot has a line
    # per trial with as many points as the trial reported (lr 0.5's stopped early: dashed)
    stored = {a["name"]: a for a in summary["outputs"].get("artifacts", [])}
    assert {"plot", "table", "table-csv"} <= set(stored) and all("s3" in stored[k] for k in ("plot", "table")), stored
    argo_url = Cluster(Settings.from_environ()).argo_ui_url()
    files = f"{argo_url}/artifact-files/{namespace}/workflows/probe-sweep/{summary['id']}/outputs"
    got = {k: urllib.request.urlopen(f"{files}/{k}", timeout=30).read().decode() for k in ("plot", "table")}
    assert got["table"].strip() == table.strip(), (got["table"], table)
    _expect_plot(got["plot"], by_name)
    shown = _sweep_in_the_argo_ui(cluster, namespace, server_kubeconfig, summary["id"])
    assert shown.count("<polyline") == 4, shown[:2000]

    # deleting the experiment deletes its trials (they are owned by its Workflow)
    client.CustomObjectsApi(cluster).delete_namespaced_custom_object(
        WORKFLOW_GROUP, WORKFLOW_VERSION, namespace, WORKFLOW_PLURAL, "probe-sweep"
    )
    poll(lambda: not client.CustomObjectsApi(cluster).list_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, label_selector="diengine/experiment=probe-sweep")["items"],
        90, "the sweep's DIJobs to be deleted with its Workflow")  # fmt: skip


EXAMPLE_SWEEP = Path(__file__).resolve().parents[2] / "workflows" / "python" / "cartpole_sweep.py"
#: The example, built for the local control plane: its images and its own pods on the real node.
CARTPOLE_SWEEP = """
import importlib.util
spec = importlib.util.spec_from_file_location("cartpole_sweep", {path!r})
example = importlib.util.module_from_spec(spec)
spec.loader.exec_module(example)
experiment = example.build({namespace!r}, dihera_image={dihera!r}, engine_image={engine!r}, placement={placement!r})
"""
#: The stop value the example's evaluator ends a job at; its evaluator's iterations are 40 apart.
STOP_VALUE = 195.0
BUDGET_SECONDS = 1200
#: The example's ServiceAccount (its Role: RULES).
EXAMPLE_ACCOUNT = "dijob-sweeper"


def _trial_nodes(wf: dict[str, Any]) -> dict[str, dict[str, Any]]:
    nodes = wf["status"].get("nodes", {}).values()
    return {n["displayName"]: n for n in nodes if n.get("templateName") == "trial"}


def test_the_cartpole_sweep_example_learns_with_one_rate_and_stops_the_other(
    real_release: Release,
    jobs_namespace: str,
    cluster: client.ApiClient,
    kubeconfig: Path,
    ding_image: str,
    poll: Poll,
    tmp_path: Path,
) -> None:
    """workflows/python/cartpole_sweep.py for real: the CartPole DQN, lr 0.001 and 0.5 over seeds 0 and 1,
    two trials at a time. The lr 0.001 trials reach the stop value (Succeeded); the lr 0.5 ones (started
    as the lr 0.001 ones end: Argo starts the trials in order) are stopped by the median rule from
    iteration 200, long before their budget; the summary ranks the trials from the returns their
    evaluators reported."""
    namespace = jobs_namespace
    _account(cluster, namespace, EXAMPLE_ACCOUNT)
    tag = package_version(Settings.from_environ())
    file = tmp_path / "cartpole_sweep.py"
    file.write_text(CARTPOLE_SWEEP.format(
        path=str(EXAMPLE_SWEEP), namespace=namespace, dihera=f"dihera.local/dihera:{tag}", engine=ding_image,
        placement=ON_REAL_NODE,
    ))  # fmt: skip
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    # waits beyond a trial's budget (1,200 s): a slow seed still ends its trial; ~3 minutes in the runs here
    run = subprocess.run(
        [sys.executable, "-m", "dihera", "experiment", "submit", str(file), "--wait", "--timeout", "1500"],
        env=env, capture_output=True, text=True, timeout=1530,
    )  # fmt: skip
    wf = read_workflow(cluster, namespace, "cartpole-lr")
    trials = _trial_nodes(wf)
    failed = {n["displayName"]: n.get("message") for n in wf["status"].get("nodes", {}).values()
              if n["phase"] in ("Failed", "Error")}  # fmt: skip
    ok = run.returncode == 0 and wf["status"]["phase"] == "Succeeded"
    assert ok, (run.stdout[-1500:], run.stderr[-999:], failed, _sweep_state(cluster, namespace, wf))
    assert "trials 2 done, 0 running, 0 failed, 2 stopped, 0 waiting of 4" in run.stdout, run.stdout[-3000:]

    jobs = client.CustomObjectsApi(cluster).list_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, label_selector="diengine/experiment=cartpole-lr"
    )["items"]
    by_name = {j["metadata"]["name"]: j for j in jobs}
    assert sorted(by_name) == [f"cartpole-lr-t0{i}" for i in range(4)], sorted(by_name)
    report = []
    for i, (lr, phase) in enumerate([(0.001, "Succeeded")] * 2 + [(0.5, "Suspended")] * 2):
        job = by_name[f"cartpole-lr-t0{i}"]
        status, annotations = job["status"], job["metadata"].get("annotations") or {}
        assert annotations["diengine/param.lr"] == repr(lr) and annotations["diengine/seed"] == str(i % 2), annotations
        assert status["phase"] == phase, (i, status)
        profile = status["profilings"]
        history = profile["evalReturnHistory"]
        assert profile["evalReturn"] == history[-1][1], profile
        node = trials[next(n for n in trials if n.startswith(f"t0{i}-lr-"))]
        # the learner reported its checkpoints (every 100 iterations into its volume; on SIGTERM when stopped)
        # through the di-server: the last one is in the status (docs/checkpoints.md)
        ckpt = profile["checkpoint"]
        assert ckpt["replica"] == "learner-0" and ckpt["iteration"] >= 100, ckpt
        assert ckpt["path"] == f"/var/dihera/checkpoints/learner-0/iteration_{ckpt['iteration']}.pth.tar", ckpt
        if phase == "Succeeded":  # the evaluator ended the job at the stop value; the node outputs its return
            out = {p["name"]: p["value"] for p in node["outputs"].get("parameters", [])}
            assert out.get("phase") == phase and float(out["evalReturn"]) == profile["evalReturn"], (out, profile)
            assert profile["evalReturn"] >= STOP_VALUE, profile
            # within a save interval (and a learner step) before the iteration the evaluator ended it at; after it,
            # the iterations the learner trains until DI-engine's finish reaches it (measured: 110 with the real
            # node beside the other tests, 2026-12-05)
            assert history[-1][0] - 120 <= ckpt["iteration"] <= history[-1][0] + 200, (ckpt, history[-3:])
            report.append(f"t0{i} reached {profile['evalReturn']:.0f} at iteration {history[-1][0]}, checkpoint "
                          f"{ckpt['iteration']}")  # fmt: skip
            # the example's dihera_figures middleware reported every role's figures (docs/training-figures.md)
            training = status.get("training") or {}
            assert training.get("iteration", 0) > 0 and training.get("envStepsPerSecond", 0) > 0, training
            assert "value" in (training.get("evaluation") or {}) and training.get("curve"), training
            points = len(training["curve"])
            report.append(f"t0{i} status.training: iteration {training['iteration']}, "
                          f"{training['envStepsPerSecond']:.0f} env steps/s, {points} curve points")  # fmt: skip
        else:  # stopped from iteration 200 on, compared with the other trials there, long before its budget
            assert node["phase"] == "Failed" and "failure condition" in node["message"], node
            reason = annotations["diengine/stopped"]
            at = int(reason.split("iteration ")[1].split(":")[0])
            assert reason.startswith("median stopping rule at iteration ") and at >= 200, reason
            # against the lr 0.001 trials, and the other lr 0.5 trial if it had reported that far or ended
            compared = re.search("of [23] other trials", reason)
            assert profile["evalReturnBest"] < STOP_VALUE and compared, (reason, profile)
            ran = _seconds(node["startedAt"], node["finishedAt"])
            assert ran < BUDGET_SECONDS / 2, (i, ran, reason)
            # stopped = suspended: the learner saved on SIGTERM, past the iteration it was judged at (or, SIGTERM
            # right after a periodic save, nothing new to save: that one, within a save interval)
            assert ckpt["iteration"] >= (at if ckpt["onTerm"] else at - 120), (ckpt, reason)
            report.append(f"t0{i} stopped at iteration {at} after {ran:.0f}s (best {profile['evalReturnBest']:.0f}), "
                          f"checkpoint {ckpt['iteration']}{' on SIGTERM' if ckpt['onTerm'] else ''}")  # fmt: skip
    assert _overlap([(n["startedAt"], n["finishedAt"]) for n in trials.values()]) == 2, trials

    (summary,) = [n for n in wf["status"]["nodes"].values() if n.get("templateName") == "summary"]
    outputs = {p["name"]: p["value"] for p in summary["outputs"]["parameters"]}
    best = json.loads(outputs["best"])
    assert best["values"] == {"lr": 0.001} and best["seeds"] == 2, best
    returns = sorted(by_name[f"cartpole-lr-t0{i}"]["status"]["profilings"]["evalReturn"] for i in (0, 1))
    assert best["evalReturn"] == pytest.approx(sum(returns) / 2), (best, returns)
    rows = outputs["results-csv"].splitlines()
    assert len(rows) == 5 and [r.split(",")[5] for r in rows[1:]] == ["Succeeded"] * 2 + ["Stopped"] * 2, rows
    svg = _learning_curve(real_release, cluster, kubeconfig, namespace, "cartpole-lr-t00", poll, tmp_path)
    assert 'data-series="return"' in svg and 'data-series="env steps/s"' in svg, svg[:2000]
    # the example stores its plot (every trial's return over iterations) in the object store
    files = f"{Cluster(Settings.from_environ()).argo_ui_url()}/artifact-files/{namespace}/workflows/cartpole-lr"
    _expect_plot(urllib.request.urlopen(f"{files}/{summary['id']}/outputs/plot", timeout=30).read().decode(), by_name)
    print(f"\n[cartpole sweep] {wf['status']['startedAt']} .. {wf['status']['finishedAt']}: " + "; ".join(report))


def _learning_curve(
    release: Release, cluster: client.ApiClient, kubeconfig: Path, namespace: str, job: str, poll: Poll, tmp: Path
) -> str:
    """The chart's di-server's learning curve of ``job`` (``/ui/.../curve.svg``), read with a token that may get
    DIJobs, through a port-forward: asserted to answer SVG."""
    token = sa_token(cluster, namespace, "curve-reader", ["get"])
    trust = ssl.create_default_context(cafile=str(published_ca(cluster, release, token, tmp / "curve-ca.crt")))
    port = free_port()
    forward = supervised_forward(str(kubeconfig), release.namespace, f"{release.name}-server", port, tmp / "fw.log")
    try:
        poll(lambda: ready(f"https://127.0.0.1:{port}", trust), 60, "the di-server through the port-forward")
        request = urllib.request.Request(f"https://127.0.0.1:{port}/ui/namespaces/{namespace}/dijobs/{job}/curve.svg",
                                         headers={"Authorization": f"Bearer {token}"})  # fmt: skip
        with urllib.request.urlopen(request, timeout=30, context=trust) as answer:
            assert answer.headers["Content-Type"] == "image/svg+xml", answer.headers
            return str(answer.read().decode())
    finally:
        os.killpg(forward.pid, signal.SIGTERM)
        forward.wait(10)


EXAMPLE_PIPELINE = Path(__file__).resolve().parents[2] / "workflows" / "python" / "cartpole_pipeline.py"


def test_the_cartpole_pipeline_example_trains_evaluates_and_exports_the_best_policy(
    real_release: Release, jobs_namespace: str, cluster: client.ApiClient, kubeconfig: Path, ding_image: str,
    tmp_path: Path,
) -> None:  # fmt: skip
    """workflows/python/cartpole_pipeline.py for real (issue 40): the example trained as DIJob
    cartpole-pipeline-train through the chart's controller, the evaluator's stored best policy located in its
    status, played for 10 episodes by the evaluate node (its mean return an output parameter), and exported as
    TorchScript by the export node, checked by loading it back and stored as its output artifact `model`."""
    namespace = jobs_namespace
    try:
        _account(cluster, namespace, EXAMPLE_ACCOUNT)
    except client.ApiException as err:  # the sweep's test made it in this namespace
        if err.status != 409:
            raise
    tag = package_version(Settings.from_environ())
    file = tmp_path / "cartpole_pipeline.py"
    file.write_text(CARTPOLE_SWEEP.replace("cartpole_sweep", "cartpole_pipeline").format(
        path=str(EXAMPLE_PIPELINE), namespace=namespace, dihera=f"dihera.local/dihera:{tag}", engine=ding_image,
        placement=ON_REAL_NODE,
    ))  # fmt: skip
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    run = subprocess.run(
        [sys.executable, "-m", "dihera", "experiment", "submit", str(file), "--wait", "--timeout", "900"],
        env=env, capture_output=True, text=True, timeout=930,
    )  # fmt: skip
    wf = read_workflow(cluster, namespace, "cartpole-pipeline")
    nodes = {n["displayName"]: n for n in wf["status"].get("nodes", {}).values() if n.get("type") != "DAG"}
    failed = {name: n.get("message") for name, n in nodes.items() if n["phase"] in ("Failed", "Error")}
    ok = run.returncode == 0 and wf["status"]["phase"] == "Succeeded"
    assert ok, (run.stdout[-2000:], run.stderr[-999:], failed, _sweep_state(cluster, namespace, wf))
    assert sorted(nodes) == ["evaluate", "export", "locate", "train"], sorted(nodes)
    out = {name: {p["name"]: p.get("value") for p in (n.get("outputs") or {}).get("parameters", [])}
           for name, n in nodes.items()}  # fmt: skip
    job = client.CustomObjectsApi(cluster).get_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, "cartpole-pipeline-train"
    )
    (owner,) = job["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"]) == ("Workflow", wf["metadata"]["uid"]), owner
    assert job["status"]["phase"] == out["train"]["phase"] == "Succeeded", (job["status"], out["train"])
    (stored,) = [a for a in job["status"]["artifacts"] if a["name"] == "best-policy"]
    assert out["locate"]["key"] == stored["key"], (out["locate"], stored)
    evaluation = json.loads(out["evaluate"]["evaluation"])
    mean = float(out["evaluate"]["mean-return"])
    assert evaluation["episodes"] == 10 and evaluation["mean"] == pytest.approx(mean), evaluation
    assert mean >= 150, evaluation  # the best evaluation's weights, greedy: CartPole's stop value is 195
    for step in ("evaluate", "export"):
        (given,) = nodes[step]["inputs"]["artifacts"]
        assert given["name"] == "policy" and given["s3"]["key"] == stored["key"], given
    # the export: a TorchScript file (a zip) in the object store, served as it is; its log says it was checked
    files = f"{Cluster(Settings.from_environ()).argo_ui_url()}/artifact-files/{namespace}/workflows/cartpole-pipeline"
    model = urllib.request.urlopen(f"{files}/{nodes['export']['id']}/outputs/model", timeout=30).read()
    assert model[:2] == b"PK" and len(model) > 1000, model[:64]
    core = client.CoreV1Api(cluster)
    node_name = nodes["export"]["name"]
    (pod,) = [p for p in core.list_namespaced_pod(namespace).items
              if (p.metadata.annotations or {}).get("workflows.argoproj.io/node-name") == node_name]  # fmt: skip
    (line,) = [x for x in core.read_namespaced_pod_log(pod.metadata.name, namespace, container="main").splitlines()
               if x.startswith("dihera-exported ")]  # fmt: skip
    exported = dict(part.split("=", 1) for part in line.split(" ")[1:])
    assert int(exported["bytes"]) == len(model) and float(exported["max_diff"]) <= 1e-5, exported
    print(f"\n[cartpole pipeline] {wf['status']['startedAt']} .. {wf['status']['finishedAt']}: best policy "
          f"{stored['key']} played 10 episodes, mean {mean:.1f}; exported {len(model)} bytes (max diff "
          f"{exported['max_diff']})")  # fmt: skip


def _sweep_state(cluster: client.ApiClient, namespace: str, wf: dict[str, Any]) -> dict[str, Any]:
    """What a failed sweep test shows: each trial DIJob's phase, reports and pods, and the daemon's log."""
    core = client.CoreV1Api(cluster)
    jobs = client.CustomObjectsApi(cluster).list_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, label_selector=f"diengine/experiment={wf['metadata']['name']}"
    )["items"]
    pods = core.list_namespaced_pod(namespace).items
    state: dict[str, Any] = {}
    for job in jobs:
        name, status = job["metadata"]["name"], job.get("status") or {}
        profile = status.get("profilings") or {}
        state[name] = {
            "phase": status.get("phase"),
            "stopped": (job["metadata"].get("annotations") or {}).get("diengine/stopped"),
            "evalIteration": profile.get("evalIteration"),
            "history": (profile.get("evalReturnHistory") or [])[-4:],
            "conditions": [(c.get("type"), c.get("message", "")[:160]) for c in status.get("conditions", [])][-3:],
            "pods": {
                p.metadata.name: (p.status.phase, {c.name: c.restart_count for c in p.status.container_statuses or ()})
                for p in pods
                if p.metadata.name.startswith(name + "-")
            },
        }
    for node in wf["status"].get("nodes", {}).values():
        if node.get("templateName") != "early-stopping":
            continue
        for pod in pods:
            if (pod.metadata.annotations or {}).get("workflows.argoproj.io/node-name") == node["name"]:
                log = core.read_namespaced_pod_log(pod.metadata.name, namespace, container="main")
                state["early-stopping"] = (node["phase"], log.splitlines()[-12:])
    return state


def _seconds(start: str, end: str) -> float:
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()


AUTOSCALED_ACCOUNT = "autoscaled"


def _as(doc: dict[str, Any], account: str) -> dict[str, Any]:
    for task in doc["spec"]["tasks"]:
        task["template"]["spec"]["serviceAccountName"] = account
    return doc


def test_slow_collectors_are_added_to_and_a_slow_learner_s_removed(
    real_release: Release, jobs_namespace: str, cluster: client.ApiClient, ding_image: str
) -> None:
    """Collector autoscaling through the chart's controller, from the figures the example's replicas report
    through the chart's di-server (issue 56, "Done when"): the example with 1 collector and autoscaling up to 4,
    its collectors slowed (``DIHERA_COLLECT_DELAY``) so the learner starves: collectors are added, the learner's
    data-wait fraction falls below its target, and the job reaches its stop value (by DI-engine's evaluator or
    ``trainingPolicy``'s target). Then a short job with a slowed learner (``DIHERA_TRAIN_DELAY``) starting at 3
    collectors: they are removed to the minimum, and ``trainingPolicy``'s iteration target ends it. Every change
    has an Event with its figures. Beside the second job: DI-engine's stock DQN main plus the one line of
    docs/training-figures.md, in one process, reporting every role's figures into its DIJob's status.

    The delays are sleeps, so that the replicas' speeds, not the node's 2 cores, decide who waits: a learner's
    step (5 updates of 64 samples) takes about 0.25 s with ``DIHERA_TRAIN_DELAY`` 0.2 (a bigger model's), and a
    collector's batch about 0.65 s with ``DIHERA_COLLECT_DELAY`` 0.6: one collector leaves the learner waiting
    about 60 % of its time, two or three feed it. Without the learner's delay its step is a few milliseconds of
    CPU and no count of collectors the node can run feeds it (measured: 0.56 with 4 collectors at 0.3 s)."""
    namespace = jobs_namespace
    _account(cluster, namespace, AUTOSCALED_ACCOUNT)
    jobs = JobStore(cluster)
    auto = {"minReplicas": 1, "maxReplicas": 4, "targetDataWaitFraction": TARGET_WAIT, "behavior": FAST_BEHAVIOR}
    starving = autoscaled_cartpole(
        namespace, ding_image, cluster, collectors=1, autoscaling=auto, collect_delay=0.6, train_delay=0.2,
        training_policy=STOP, name="starving",
    )  # fmt: skip
    # DI-engine's exchange paces each collector by the learner's steps (it waits for the learner's context): each
    # adds n_sample 8 env steps per learner step of 5 x 64 samples, a replay ratio of 40 / collectors (measured
    # 13.3 at 3). The target is the config's own ratio (update_per_collect x batch_size / n_sample = 40): at 3
    # collectors samples pile up, a third of it, and autoscaling gives collectors back down to the minimum.
    saturated = {**auto, "targetReplayRatio": 40.0}
    slow_learner = autoscaled_cartpole(
        namespace, ding_image, cluster, collectors=3, autoscaling=saturated, train_delay=0.5,
        training_policy={"target": {"metric": "iteration", "value": 600}}, name="saturated",
    )  # fmt: skip
    # the three jobs at once (their delays are sleeps: the node's cores are not what they wait for)
    for doc in (starving, slow_learner, _stock_plus_one_line(namespace, ding_image, cluster)):
        jobs.create(_as(doc, AUTOSCALED_ACCOUNT))
    watch, slow_watch = Watch(cluster, namespace, "starving"), Watch(cluster, namespace, "saturated")
    with ThreadPoolExecutor(max_workers=2) as pool:
        stock = pool.submit(follow, cluster, namespace, "stock-figures", 300)
        slow = pool.submit(follow, cluster, namespace, "saturated", 300, slow_watch.tick)
        run = follow(cluster, namespace, "starving", timeout=420, on_tick=watch.tick)
        stock_run, slow_run = stock.result(), slow.result()
    added = [m for r, m in scale_events(cluster, namespace, "starving") if r == "CollectorsAdded"]
    print(
        f"\n[autoscaling] starving: {run.status.get('phase')} in {run.seconds:.0f} s, at most {watch.most} "
        f"collectors, data wait after the last change {[round(w, 2) for w in watch.waits_after_change]}; {added}"
    )
    assert run.status["phase"] == "Succeeded", (run.phases, run.status.get("conditions"))
    assert watch.most > 1 and added, (watch.most, added)
    assert all("waited for data" in m and "target 30%" in m for m in added), added
    assert watch.waits_after_change and min(watch.waits_after_change) < TARGET_WAIT, watch.waits_after_change
    assert run.status["restarts"] == 0, run.status

    run, watch = slow_run, slow_watch
    removed = [m for r, m in scale_events(cluster, namespace, "saturated") if r == "CollectorsRemoved"]
    autoscaled = [c for c in run.status.get("conditions", []) if c["type"] == "CollectorsAutoscaled"]
    print(
        f"[autoscaling] saturated: {run.status.get('phase')} in {run.seconds:.0f} s, at least {watch.least} "
        f"collectors; {removed}; {autoscaled}; training {run.status.get('training', {}).get('replayRatio')}"
    )
    assert watch.least == 1 and removed, (watch.least, removed, autoscaled, run.status.get("training"))
    assert all("the learner is saturated" in m and "replay ratio" in m for m in removed), removed
    assert run.status["phase"] == "Succeeded", (run.phases, run.status.get("conditions"))
    assert run.status["conditions"][-1]["reason"] in ("TrainingTargetReached", "JobSucceeded"), run.status
    # the stock program reported every role's figures through the chart's di-server into its own DIJob's status
    assert stock_run.status["phase"] == "Succeeded", (stock_run.phases, stock_run.status.get("conditions"))
    training = stock_run.status.get("training") or {}
    assert training.get("iteration", 0) > 0 and training.get("envSteps", 0) > 0, training
    # the rates of the newest reports (the last learner report may come after its last step: a rate of 0)
    assert training.get("envStepsPerSecond", 0) > 0 and "iterationsPerSecond" in training, training
    # a return the API server read as a whole number comes back an int (CartPole's returns are step counts)
    assert isinstance((training.get("evaluation") or {}).get("value"), (int, float)), training


#: DI-engine's stock DQN main (ding/example/dqn.py, read from the image's DI-engine) plus the one line a user adds
#: (``task.use(dihera_figures())``, the middleware on the image's PYTHONPATH), run in one process for argv[1] steps.
STOCK_PLUS_ONE_LINE = """
import inspect, sys
import ding.example.dqn as stock
source = inspect.getsource(stock)
run = "        task.run()"
assert source.count(run) == 1, "DI-engine's stock DQN main changed"
source = source.replace(run, "        task.use(dihera_figures())\\n        task.run(max_step=%d)" % int(sys.argv[1]))
namespace = {"__name__": "stock_dqn"}
exec(compile("from dihera_figures import dihera_figures\\n" + source, "stock_dqn.py", "exec"), namespace)
namespace["main"]()
"""


def _stock_plus_one_line(namespace: str, image: str, cluster: client.ApiClient) -> dict[str, Any]:
    """workflows/serial.yaml's one replica running :data:`STOCK_PLUS_ONE_LINE` for 150 steps instead."""
    doc = on_real_node("serial.yaml", namespace, image, cluster)
    doc["metadata"]["name"] = "stock-figures"
    container = doc["spec"]["tasks"][0]["template"]["spec"]["containers"][0]
    container["command"], container["args"] = ["python", "-c", STOCK_PLUS_ONE_LINE], ["150"]
    return doc
