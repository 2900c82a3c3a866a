"""A 2,000-replica job on the local control plane's kwok nodes (figures printed, not asserted).

    python bench/bench_bigjob.py [--collectors 2000] [--step 100] [--rounds 1]

In one run, each way in its own namespace (deleted, pods gone, before the next):
1. direct: the DIJob rendered here and its ConfigMap, Service and Workflow created directly (Argo
   alone); then +step collectors the way the controller does it, directly: the new membership
   ConfigMap written and the Workflow JSON-patched (dihera.scaling's pure plan and patch);
2. controller: the DIJob created, then its ``spec.tasks[].replicas`` edited (what ``kubectl edit``
   sends), with a ``dihera controller`` of its own (standalone) watching ``dihera-test-bench-bigctl-*``
   (not the direct run's namespace).
Each figure is the time from the first write to the last of the job's pods seen Running (a watch of
the pods, raw JSON); ratio = controller / direct. Both ways send their +step only once Argo's Workflow
status shows every pod Running and its workflow-controller is idle (:func:`argo_caught_up`): Argo's pass
over a 2,000-replica DAG takes 8-16 CPU seconds, and a patch sent while one runs waits for the next.
With ``--rounds N`` both run N times, alternating which goes first (this machine's speed drifts over
minutes: in one run all of Argo, the API server and kube-controller-manager used ~20 % more CPU for the
same work in the second half); the table gives the medians, each round's ratio after them. The kwok
nodes get room for the job first (tests/integration/kwok_capacity.py). Needs $KUBECONFIG or .devcluster/kubeconfig.

Progress goes to stderr as each phase ends; on the local control plane each phase also says how many
CPU seconds each component used (bench/cpu.py), which shows where the controller's extra time goes.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

REPO = Path(__file__).resolve().parents[1]
DIHERA = str(Path(sys.executable).with_name("dihera"))
PREFIX = "dihera-test-bench"
sys.path.insert(0, str(REPO))

from cpu import breakdown, cpu_seconds  # noqa: E402
from crd import install_crd  # noqa: E402

from dihera import load_job, render  # noqa: E402
from dihera.kube.jobs import JobStore  # noqa: E402
from dihera.kube.objects import ObjectStore  # noqa: E402
from dihera.render.objects import membership_configmap  # noqa: E402
from dihera.render.settings import RenderSettings  # noqa: E402
from dihera.scaling import ScaleRequest, plan_scale, workflow_patch  # noqa: E402
from dihera.scaling.dag import workflow_nodes  # noqa: E402
from tests.integration.kwok_capacity import kwok_capacity  # noqa: E402

NAME = "big"
#: Argo's workflow-controller counts as idle once it used at most IDLE_CPU CPU seconds in IDLE_WINDOW seconds
#: (a pass over a big Workflow keeps a core busy; idle, it uses ~0.01 s a second).
IDLE_WINDOW = 3.0
IDLE_CPU = 0.3
#: Longest wait for it (seconds): other Workflows on the cluster may keep it busy (said, and the +step sent).
IDLE_WAIT = 90.0
WORKFLOWS = ("argoproj.io", "v1alpha1")
DIJOBS = ("diengine.opendilab.org", "v2alpha1")


def job_manifest(ns: str, collectors: int, most: int) -> dict[str, Any]:
    def task(type_: str, replicas: int) -> dict[str, Any]:
        tmpl = {
            "metadata": {"annotations": {"sim.dihera.io/run-seconds": "3600"}},
            "spec": {"containers": [{"name": "main", "image": "opendilab/ding:nightly", "command": ["ditask"]}]},
        }
        return {"type": type_, "replicas": replicas, "template": tmpl}

    return {
        "apiVersion": "diengine.opendilab.org/v2alpha1",
        "kind": "DIJob",
        "metadata": {"name": NAME, "namespace": ns},
        "spec": {
            "backoffLimit": 0,
            "maxReplicas": most,
            "tasks": [task("learner", 1), task("collector", collectors), task("evaluator", 1)],
        },
    }


class RunningPods:
    """When each of a namespace's pods was first seen Running (local receive time), from a raw watch.

    :meth:`close` stops the watch: a watch left running past its namespace's deletion would, once its
    resourceVersion expired, be refused (410) and sent again in a tight loop, slowing the later rounds'
    API server (seen: +40-70 CPU-seconds in a round).
    """

    def __init__(self, api: client.ApiClient, ns: str) -> None:
        self.api, self.ns = api, ns
        self.running_at: dict[str, float] = {}
        self._stop = threading.Event()
        self._resp: Any = None
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        core = client.CoreV1Api(self.api)
        version = ""
        while not self._stop.is_set():
            try:
                self._resp = resp = core.list_namespaced_pod(
                    self.ns, watch=True, resource_version=version, timeout_seconds=900, _preload_content=False
                )
                for line in resp:
                    event = json.loads(line)
                    if event.get("type") == "ERROR":  # 410 Gone: watch again from the current state
                        version = ""
                        break
                    pod = event["object"]
                    version = pod["metadata"].get("resourceVersion", version)
                    host = (pod["metadata"].get("labels") or {}).get("diengine/pod")
                    if host and (pod.get("status") or {}).get("phase") == "Running":
                        self.running_at.setdefault(host, time.monotonic())
            except Exception:  # the connection shut by close(), or a network error: again unless stopped
                if not self._stop.is_set():
                    time.sleep(1)

    def close(self) -> None:
        self._stop.set()
        if self._resp is not None:
            with contextlib.suppress(Exception):
                self._resp.shutdown()
        self._thread.join(5)

    def wait(self, hosts: set[str], timeout: float) -> float:
        """The time the last of ``hosts`` was first seen Running."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            seen = [self.running_at[h] for h in hosts if h in self.running_at]
            if len(seen) == len(hosts):
                return max(seen)
            time.sleep(0.2)
        missing = len(hosts) - sum(h in self.running_at for h in hosts)
        raise SystemExit(f"timed out after {timeout:.0f}s: {missing} of {len(hosts)} pods never seen Running")


#: Components whose work is the same either way (the same pods to simulate and to schedule): their CPU
#: seconds measure how fast the machine ran during a phase (its speed drifts by tens of percent over minutes).
YARDSTICK = ("kwok", "kube-scheduler")


def yardstick(before: dict[str, float], after: dict[str, float]) -> float:
    """CPU seconds the :data:`YARDSTICK` components used between two readings (0 on another cluster)."""
    return sum(after.get(k, 0.0) - before.get(k, 0.0) for k in YARDSTICK)


def progress(what: str, seconds: float, cpu_before: dict[str, float]) -> dict[str, float]:
    """Say on stderr that ``what`` took ``seconds`` and what each component used meanwhile; the new CPU reading."""
    now = cpu_seconds()
    at = time.strftime("%H:%M:%S")
    line = f"[bench_bigjob] {at} {what}: {seconds:.1f} s (CPU: {breakdown(cpu_before, now)})"
    print(line, file=sys.stderr, flush=True)
    return now


def argo_caught_up(custom: client.CustomObjectsApi, ns: str, pods: int, timeout: float) -> float:
    """Wait until the Workflow's status shows ``pods`` pod nodes Running and Argo is idle (seconds waited).

    The pods are Running seconds before Argo's status says so: Argo marks them in one pass over the whole
    DAG, and on a 2,000-replica Workflow a pass takes 8-16 CPU seconds (its log), changes or not; pod events
    during a pass queue another. A Workflow patch is acted on only by the first pass that starts after Argo
    saw it, so a +step sent while a pass runs waits for the rest of it: 0-16 s more, either way, at random
    (seen: a patch 1.9 s from the pass that saw it, another 13.6 s). Both ways therefore start their +step
    from the same state: Argo's status caught up with the apply and its workflow-controller idle
    (:data:`IDLE_CPU` over :data:`IDLE_WINDOW`; on another cluster its CPU is not known and only the
    status is waited for).
    """
    start = time.monotonic()
    while True:
        workflow = custom.get_namespaced_custom_object(*WORKFLOWS, ns, "workflows", NAME)
        nodes = workflow_nodes(workflow).values()
        if sum(1 for node in nodes if node.get("type") == "Pod" and node.get("phase") == "Running") >= pods:
            break
        if time.monotonic() - start > timeout:
            raise SystemExit(f"Argo's Workflow never showed {pods} pods Running")
        time.sleep(1)
    readings: list[tuple[float, float]] = []  # (when, Argo's CPU seconds so far)
    while "workflow-controller" in (now := cpu_seconds()):
        readings.append((time.monotonic(), now["workflow-controller"]))
        before = [cpu for at, cpu in readings if at <= readings[-1][0] - IDLE_WINDOW]
        if before and readings[-1][1] - before[-1] <= IDLE_CPU:
            break
        if time.monotonic() - start > timeout or readings[-1][0] - readings[0][0] > IDLE_WAIT:
            print(f"[bench_bigjob] Argo did not go idle in {IDLE_WAIT:.0f} s; +step sent anyway", file=sys.stderr)
            break
        time.sleep(0.5)
    return time.monotonic() - start


def hosts(first: int, stop: int, with_others: bool = True) -> set[str]:
    out = {f"{NAME}-collector-{i}" for i in range(first, stop)}
    return out | {f"{NAME}-learner-0", f"{NAME}-evaluator-0"} if with_others else out


def new_namespace(core: client.CoreV1Api, tag: str) -> str:
    ns = f"{PREFIX}-{tag}-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": ns}})
    for _ in range(100):
        if core.list_namespaced_service_account(ns).items:
            break
        time.sleep(0.1)
    return ns


def delete_and_wait(core: client.CoreV1Api, ns: str, timeout: float = 600) -> None:
    core.delete_namespace(ns)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            core.read_namespace(ns)
        except ApiException as err:
            if err.status != 404:
                raise
            return
        time.sleep(1)
    raise SystemExit(f"namespace {ns} still not gone after {timeout:.0f}s")


def direct(api: client.ApiClient, n: int, step: int, timeout: float) -> tuple[float, float, float]:
    core, objects, custom = client.CoreV1Api(api), ObjectStore(api), client.CustomObjectsApi(api)
    ns = new_namespace(core, "bigdirect")
    pods = RunningPods(api, ns)
    job = load_job(job_manifest(ns, n, n + step + 2))
    rendered = render(job, RenderSettings())
    cpu, t0 = cpu_seconds(), time.monotonic()
    for obj in rendered.objects():
        objects.create(obj)
    start = pods.wait(hosts(0, n), timeout) - t0
    before, cpu = cpu, progress(f"direct: apply -> {n + 2} Running", start, cpu)
    yard = yardstick(before, cpu)
    caught_up = argo_caught_up(custom, ns, n + 2, timeout)
    cpu = progress("direct: Argo's status caught up, Argo idle", caught_up, cpu)
    workflow = custom.get_namespaced_custom_object(*WORKFLOWS, ns, "workflows", NAME)
    plan = plan_scale(job, rendered.membership, workflow, ScaleRequest.add("collector", step))
    configmap = membership_configmap(plan.job, plan.membership, RenderSettings())
    t1 = time.monotonic()
    core.replace_namespaced_config_map(configmap["metadata"]["name"], ns, configmap)
    custom.patch_namespaced_custom_object(
        *WORKFLOWS, ns, "workflows", NAME, workflow_patch(plan.membership, workflow),
        _content_type="application/json-patch+json",
    )  # fmt: skip
    scale = pods.wait(hosts(n, n + step, False), timeout) - t1
    progress(f"direct: +{step} -> Running", scale, cpu)
    pods.close()
    delete_and_wait(core, ns)
    return start, scale, yard


def via_controller(api: client.ApiClient, n: int, step: int, timeout: float) -> tuple[float, float, float, float]:
    core, jobs, custom = client.CoreV1Api(api), JobStore(api), client.CustomObjectsApi(api)
    ns = new_namespace(core, "bigctl")
    pods = RunningPods(api, ns)
    cpu, t0 = cpu_seconds(), time.monotonic()
    jobs.create(job_manifest(ns, n, n + step + 2))
    start = pods.wait(hosts(0, n), timeout) - t0
    applied = progress(f"controller: apply -> {n + 2} Running", start, cpu)
    yard = yardstick(cpu, applied)
    deadline = time.monotonic() + timeout
    while ((jobs.get(ns, NAME) or {}).get("status") or {}).get("phase") != "Running":
        if time.monotonic() > deadline:
            raise SystemExit("the DIJob's status never said Running")
        time.sleep(0.2)
    status_at = time.monotonic() - t0
    caught_up = argo_caught_up(custom, ns, n + 2, timeout)
    progress("controller: DIJob status Running, Argo's status caught up, Argo idle", caught_up, applied)
    body = jobs.get(ns, NAME) or {}
    tasks = body["spec"]["tasks"]
    for t in tasks:
        if t["type"] == "collector":
            t["replicas"] = n + step
    cpu, t1 = cpu_seconds(), time.monotonic()
    custom.patch_namespaced_custom_object(
        *DIJOBS, ns, "dijobs", NAME, {"spec": {"tasks": tasks}}, _content_type="application/merge-patch+json"
    )
    scale = pods.wait(hosts(n, n + step, False), timeout) - t1
    progress(f"controller: +{step} -> Running", scale, cpu)
    pods.close()
    delete_and_wait(core, ns)
    return start, scale, status_at, yard


@dataclass(frozen=True)
class Round:
    """One run each way: seconds to all Running after the apply and after +step, the DIJob's status
    Running, and the :data:`YARDSTICK` CPU seconds of each apply."""

    direct_apply: float
    direct_scale: float
    ctl_apply: float
    ctl_scale: float
    ctl_status: float
    direct_yard: float
    ctl_yard: float

    @property
    def speed(self) -> float | None:
        """How much slower the machine ran in the controller's apply than in the direct one (None: unknown)."""
        return self.ctl_yard / self.direct_yard if self.direct_yard > 0 and self.ctl_yard > 0 else None


def _each(values: list[float]) -> str:
    return f"   (median of {len(values)} rounds; each: {', '.join(f'{x:.2f}' for x in values)})"


def report(n: int, step: int, rounds: list[Round]) -> None:
    """The table: each figure's median over the rounds, and with more than one round each round's."""
    print(f"job of 1 learner + {n} collectors + 1 evaluator   direct(s)  controller(s)  ratio")
    for what, d, c in (
        (f"apply -> all {n + 2} pods Running", "direct_apply", "ctl_apply"),
        (f"+{step} -> Running", "direct_scale", "ctl_scale"),
    ):
        direct_s = statistics.median(getattr(r, d) for r in rounds)
        ctl_s = statistics.median(getattr(r, c) for r in rounds)
        ratios = [getattr(r, c) / getattr(r, d) for r in rounds]
        line = f"  {what:<40}  {direct_s:9.1f}  {ctl_s:13.1f}  {statistics.median(ratios):5.2f}"
        print(line + (_each(ratios) if len(rounds) > 1 else ""))
    status = statistics.median(r.ctl_status for r in rounds)
    print(f"  (controller: DIJob status Running {status:.1f}s after the apply)")
    speeds = [r.speed for r in rounds]
    if all(x is not None for x in speeds):
        adjusted = [r.ctl_apply / r.direct_apply / (r.speed or 1.0) for r in rounds]
        yard = " + ".join(YARDSTICK)
        line = f"  apply ratio over the machine's speed ({yard} CPU): {statistics.median(adjusted):.2f}"
        print(line + (_each(adjusted) if len(rounds) > 1 else ""))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--collectors", type=int, default=2000)
    parser.add_argument("--step", type=int, default=100)
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="direct and controller runs this many times each, alternating which goes first (the machine's "
        "speed drifts over minutes); the table gives medians",
    )
    args = parser.parse_args()
    n, step = args.collectors, args.step
    kubeconfig = os.environ.get("KUBECONFIG") or str(REPO / ".devcluster" / "kubeconfig")
    install_crd(kubeconfig)
    api = config.new_client_from_config(config_file=kubeconfig)
    timeout = 120 + n * 0.5
    (REPO / ".devcluster" / "logs").mkdir(parents=True, exist_ok=True)
    log = open(REPO / ".devcluster" / "logs" / "bench-bigjob.log", "ab")  # noqa: SIM115
    # only the controller's namespaces: watching the direct run's pods would slow Argo alone down too
    argv = [DIHERA, "controller", "--kubeconfig", kubeconfig, "-n", f"{PREFIX}-bigctl-*", "--standalone"]
    proc = subprocess.Popen([*argv, "--metrics-port", "0", "--health-port", "0"], stdout=log, stderr=log)
    rounds: list[Round] = []
    try:
        with kwok_capacity(api, n + step + 2):
            time.sleep(3)
            for i in range(args.rounds):
                if i % 2 == 0:
                    d_apply, d_scale, d_yard = direct(api, n, step, timeout)
                    c_apply, c_scale, c_status, c_yard = via_controller(api, n, step, timeout)
                else:
                    c_apply, c_scale, c_status, c_yard = via_controller(api, n, step, timeout)
                    d_apply, d_scale, d_yard = direct(api, n, step, timeout)
                rounds.append(Round(d_apply, d_scale, c_apply, c_scale, c_status, d_yard, c_yard))
                if args.rounds > 1:
                    apply, scale = c_apply / d_apply, c_scale / d_scale
                    progress_line = f"round {i + 1}/{args.rounds}: apply ratio {apply:.2f}, +{step} ratio {scale:.2f}"
                    print(f"[bench_bigjob] {progress_line}", file=sys.stderr, flush=True)
        report(n, step, rounds)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
