"""DIJobs of workflows/ run for real on the local control plane's real node (helpers, not tests).

A workflow's tasks get the real node's placement (label and taint), the image built here (never
pulled) and a ServiceAccount that Argo's executor may use; the job is then followed to its end, its
phases recorded, and its pods' exit codes and logs read back.
"""

from __future__ import annotations

import copy
import json
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from ci.devcluster import realnode
from dihera.kube.jobs import JobStore
from tests.integration.jobs import job_pods

__all__ = [
    "KILL_DITASK",
    "ON_REAL_NODE",
    "THROTTLED",
    "UNTHROTTLED",
    "Run",
    "cpu_limit",
    "dialled",
    "executor_account",
    "exit_codes",
    "follow",
    "job_logs",
    "kill_ditask",
    "on_real_node",
    "own_lines",
    "resize_learner",
    "small_requests",
    "sockets",
]

REPO = Path(__file__).resolve().parents[2]
FINAL = ("Succeeded", "Failed")
#: a pod template spec's placement on the real node: its label and its taint
ON_REAL_NODE = {
    "nodeSelector": dict([realnode.NODE_LABEL]),
    "tolerations": [{**realnode.NODE_TAINT, "operator": "Equal"}],
}

# What Argo's executor does with the pod's service account (Argo's "Workflow RBAC"; the chart's
# templates/executor-rbac.yaml grants the same): for tests that run DIJobs on the real node through an
# in-process controller, without the chart.
EXECUTOR_RULES = [
    {"apiGroups": ["argoproj.io"], "resources": ["workflowtaskresults"], "verbs": ["create", "patch"]},
]


def executor_account(cluster: client.ApiClient, namespace: str) -> str:
    """A service account in ``namespace`` allowed what Argo's init and wait containers do (made once: several
    jobs of a namespace share it)."""
    name = "dijob-executor"
    rbac = client.RbacAuthorizationV1Api(cluster)
    binding = {
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
    }
    for create, body in (
        (client.CoreV1Api(cluster).create_namespaced_service_account, {"metadata": {"name": name}}),
        (rbac.create_namespaced_role, {"metadata": {"name": name}, "rules": EXECUTOR_RULES}),
        (rbac.create_namespaced_role_binding, binding),
    ):
        try:
            create(namespace, body)
        except client.ApiException as err:
            if err.status != 409:
                raise
    return name


def on_real_node(
    example: str | dict[str, Any],
    namespace: str,
    image: str,
    cluster: client.ApiClient,
    images: dict[str, str] | None = None,
) -> dict[str, Any]:
    """workflows/`example` (or a DIJob manifest) with every task placed on the real node, running `image`
    (never pulled) under a ServiceAccount Argo's executor may use; `images` maps an image the workflow names
    to the local one to run instead of `image` (a Redis task's). Nothing else of the workflow changes."""
    if isinstance(example, str):
        doc: dict[str, Any] = yaml.safe_load((REPO / "workflows" / example).read_text())
    else:
        doc = copy.deepcopy(example)
    doc["metadata"]["namespace"] = namespace
    account = executor_account(cluster, namespace)
    for task in doc["spec"]["tasks"]:  # tasks may share one template (YAML anchors): idempotent edits
        spec = task["template"]["spec"]
        spec.update(ON_REAL_NODE, serviceAccountName=account)
        for container in [*spec.get("initContainers", []), *spec["containers"]]:
            local = (images or {}).get(container["image"], image)
            container.update(image=local, imagePullPolicy="Never")
    return doc


def small_requests(doc: dict[str, Any], cpu: str = "20m") -> dict[str, Any]:
    """`doc` with every container's CPU request lowered to `cpu`: several jobs then fit on the real node's two
    cores at once (they share the cores anyway; the requests only decide what the scheduler admits)."""
    for task in doc["spec"]["tasks"]:
        for container in task["template"]["spec"]["containers"]:
            requests = container.setdefault("resources", {}).setdefault("requests", {})
            requests["cpu"] = cpu
    return doc


#: Kills the DI-engine process (`ditask`, and with --parallel-workers its workers) of a container: a child of
#: Argo's emissary (PID 1), not the pod object; prints what it killed.
KILL_DITASK = """
import os, signal
for pid in (p for p in os.listdir("/proc") if p.isdigit() and p != "1" and int(p) != os.getpid()):
    try:
        argv = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\\0")
    except OSError:
        continue
    if any(arg.endswith(b"ditask") for arg in argv[:2]):
        os.kill(int(pid), signal.SIGKILL)
        print("killed", pid, b" ".join(argv[:3]).decode())
"""


#: The TCP sockets of a pod's network namespace (/proc/net/tcp): listening ports, and established connections as
#: [local port, remote address, remote port]; printed as JSON.
SOCKETS = """
import json
def address(hexa):
    ip, port = hexa.split(":")
    return ".".join(str(int(ip[i:i + 2], 16)) for i in (6, 4, 2, 0)), int(port, 16)
out = {"listen": [], "established": []}
for line in open("/proc/net/tcp").read().splitlines()[1:]:
    local, remote, state = line.split()[1:4]
    if state == "0A":
        out["listen"].append(address(local)[1])
    elif state == "01":
        out["established"].append([address(local)[1], *address(remote)])
print(json.dumps(out))
"""


def sockets(kubeconfig: Path, namespace: str, pod: str, container: str = "di-container") -> dict[str, Any]:
    """What :data:`SOCKETS` reads in `pod` (kubectl exec)."""
    argv = ["kubectl", f"--kubeconfig={kubeconfig}", "exec", "-n", namespace, pod, "-c", container, "--"]
    done = subprocess.run([*argv, "python", "-c", SOCKETS], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def dialled(found: dict[str, Any], ports: Iterable[int]) -> list[tuple[str, int]]:
    """The (address, port)s a pod dialled on `ports`, one per connection, sorted: its established connections to
    them from a port it does not listen on (connections others dialled to it arrive on its listening ports)."""
    wanted, listening = set(ports), set(found["listen"])
    return sorted((ip, port) for local, ip, port in found["established"] if port in wanted and local not in listening)


def kill_ditask(kubeconfig: Path, namespace: str, pod: str, container: str = "di-container") -> str:
    """SIGKILL the DI-engine process in `pod` (kubectl exec): what was killed."""
    argv = ["kubectl", f"--kubeconfig={kubeconfig}", "exec", "-n", namespace, pod, "-c", container, "--"]
    done = subprocess.run([*argv, "python", "-c", KILL_DITASK], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


@dataclass
class Run:
    """A DIJob followed until it ended: the phases seen in order, and its last status."""

    phases: list[str] = field(default_factory=list)
    status: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0


def follow(
    cluster: client.ApiClient,
    namespace: str,
    name: str,
    timeout: float,
    on_tick: Callable[[dict[str, Any]], None] | None = None,
) -> Run:
    """Poll the DIJob until it is Succeeded or Failed; `on_tick(status)` each second (a test's side work).
    Fails naming the phases seen and the pods' states after `timeout` seconds."""
    jobs, run = JobStore(cluster), Run()
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        run.status = dict(((jobs.get(namespace, name) or {}).get("status")) or {})
        phase = run.status.get("phase")
        if phase and (not run.phases or run.phases[-1] != phase):
            run.phases.append(phase)
        if phase in FINAL:
            run.seconds = time.monotonic() - start
            return run
        if on_tick:
            on_tick(run.status)
        time.sleep(1.0)
    pods = {p["metadata"]["name"]: p["status"].get("phase") for p in job_pods(cluster, namespace, name)}
    tails = {host: log[-1500:] for host, log in job_logs(cluster, namespace, name).items()}
    pytest.fail(f"DIJob {name} did not end within {timeout:.0f}s: phases {run.phases}, pods {pods}, logs {tails}")


def exit_codes(pod: dict[str, Any]) -> dict[str, int | None]:
    """Each container's exit code (None while it has not terminated)."""
    codes: dict[str, int | None] = {}
    for status in pod["status"].get("containerStatuses", []):
        terminated = status.get("state", {}).get("terminated")
        codes[status["name"]] = terminated["exitCode"] if terminated else None
    return codes


def pod_endings(cluster: client.ApiClient, namespace: str, pods: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """For a failure's message: how each pod ended (its phase, reason and message, each container's terminated
    reason and exit code) and its Events (the kubelet's and the scheduler's reasons), by pod name."""
    events = client.CoreV1Api(cluster).list_namespaced_event(namespace).items
    ended: dict[str, Any] = {}
    for pod in pods:
        status, uid = pod.get("status") or {}, pod["metadata"].get("uid")
        keys = ("reason", "exitCode", "finishedAt")
        containers = {
            c["name"]: {k: c.get("state", {}).get("terminated", {}).get(k) for k in keys}
            for c in status.get("containerStatuses", [])
        }
        ended[pod["metadata"]["name"]] = {
            "phase": status.get("phase"),
            "reason": status.get("reason"),
            "message": status.get("message"),
            "deleted": pod["metadata"].get("deletionTimestamp"),
            "containers": containers,
            "events": [
                f"{e.last_timestamp or e.event_time} {e.source.component if e.source else '-'} {e.reason}: {e.message}"
                for e in events
                if e.involved_object.uid == uid
            ],
        }
    return ended


def own_lines(log: str) -> list[str]:
    """The job's own lines, without Argo's emissary lines (argo=true)."""
    return [line for line in log.splitlines() if line and "argo=true" not in line]


def job_logs(cluster: client.ApiClient, namespace: str, name: str, container: str | None = None) -> dict[str, str]:
    """The log of each pod's main container (the first of its template), by pod name."""
    core, logs = client.CoreV1Api(cluster), {}
    for pod in job_pods(cluster, namespace, name):
        main = container or next(c["name"] for c in pod["spec"]["containers"] if c["name"] != "wait")
        try:
            log = core.read_namespaced_pod_log(pod["metadata"]["name"], namespace, container=main)
            logs[pod["metadata"]["name"]] = log or ""  # an empty log comes back as None
        except client.ApiException as err:  # not started yet, or already gone
            logs[pod["metadata"]["name"]] = f"<no log: {err.status} {err.reason}>"
    return logs


#: The learner's CPU while a test does something that must happen during training (a collector added, the
#: node's kubelet and containerd restarted). CartPole converges 25-60 s after the learner's first iteration,
#: faster than a collector added then can start (its pod, DI-engine's torch import on cores the running
#: replicas keep busy): in runs here the job finished first. So tests throttle the learner in place
#: (Kubernetes' in-place pod resize: same pod, same container, no restart): training goes on, slower, and the
#: collectors and the evaluator, which wait for the learner's models, leave the cores to the rest. A cap from
#: the start would slow the learner's own start-up (imports, config formatting) as much as its training.
THROTTLED = {"requests": {"cpu": "50m"}, "limits": {"cpu": "50m"}}
#: Then back to the template's request; a limit once set cannot be removed, so the node's two cores.
UNTHROTTLED = {"requests": {"cpu": "200m"}, "limits": {"cpu": "2"}}


def resize_learner(cluster: client.ApiClient, namespace: str, pod: str, resources: dict[str, Any]) -> None:
    """In-place resize of the learner's DI-engine container (the pods/resize subresource)."""
    body = {"spec": {"containers": [{"name": "di-container", "resources": resources}]}}
    client.CoreV1Api(cluster).patch_namespaced_pod_resize(pod, namespace, body)


def cpu_limit(pod: dict[str, Any]) -> str | None:
    """The CPU limit the kubelet applied to the pod's DI-engine container (its status), if any."""
    for status in pod.get("status", {}).get("containerStatuses", []):
        if status["name"] == "di-container":
            value = ((status.get("resources") or {}).get("limits") or {}).get("cpu")
            return None if value is None else str(value)
    return None
