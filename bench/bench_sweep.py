"""Sweep benchmark on the local control plane: an experiment as an Argo Workflow against a plain script.

    python bench/bench_sweep.py [--trials 100] [--parallelism 10] [--run-seconds 30] [--runner plugin]

The same trials twice, each a DIJob of one collector on kwok's simulated nodes that runs
``--run-seconds`` (the ``sim.dihera.io/run-seconds`` annotation), through one dihera controller of
its own (``dihera-test-sweep-*`` namespaces, standalone):

1. **sweep**: a random search of ``--trials`` learning rates (``ex.loguniform``, seed 0) with
   ``--parallelism``, rendered by ``dihera.experiment.sweep_workflow`` and created as one Workflow whose
   trial nodes create the DIJobs and wait for them; its summary node (dihera's image) reads them back.
   ``--runner plugin`` (default): podless trial nodes, dihera's executor plugin in the Workflow's agent pod
   on the real node creates the DIJobs (``dihera experiment plugin-manifests`` installed in the namespace);
   ``--runner resource``: Argo resource templates, a pod per trial on the real node. Wall time: the
   Workflow's creation to its phase Succeeded, as a watch sees it;
2. **plain script**: the same DIJob manifests (``Sweep.trial_manifest``) created by this script, at most
   ``--parallelism`` alive, the next one created as soon as a watch sees one end. Wall time: the first
   creation to the last DIJob's end.

Printed: both wall times and their ratio (goal <= 1.10), the most trials alive at once in each (from the
DIJobs' creation and end as a watch saw them; with resource templates also from the trial nodes' start and
end times: plugin nodes start together and wait in the plugin for a slot), and the CPU seconds each
process of the local control plane used in each run (bench/cpu.py: dihera's controller beside Argo's
workflow-controller, the API server, the real node's kubelet and containerd running the Workflow's
pods). Needs the local control plane with its real node
(.devcluster/kubeconfig) and the dihera image built there.
"""

from __future__ import annotations

import argparse
import os
import runpy
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from kubernetes import client, config, watch

REPO = Path(__file__).resolve().parents[1]
DIHERA = str(Path(sys.executable).with_name("dihera"))
PREFIX = "dihera-test-sweep"
ACCOUNT = "sweeper"
sys.path.insert(0, str(REPO))

from cpu import breakdown, cpu_seconds  # noqa: E402
from crd import install_crd  # noqa: E402

from ci.devcluster import realnode  # noqa: E402
from ci.devcluster.images import package_version  # noqa: E402
from ci.devcluster.settings import Settings  # noqa: E402
from dihera.kube.apply import apply_object  # noqa: E402
from dihera.kube.jobs import JobStore  # noqa: E402
from dihera.schema import GROUP, PLURAL, VERSION  # noqa: E402
from dihera.sweeps import Runner, Sweep  # noqa: E402
from dihera.sweeps.plugin import plugin_manifests  # noqa: E402
from dihera.sweeps.workflow import build_sweep_workflow  # noqa: E402

ENDED = ("Succeeded", "Failed")
EXAMPLE = SimpleNamespace(**runpy.run_path(str(REPO / "workflows" / "python" / "kwok_plugin_sweep.py")))
#: What the sweep's pods (trial nodes, summary) do with DIJobs and Argo's task results.
RULES = [
    {"apiGroups": [GROUP], "resources": [PLURAL], "verbs": ["create", "get", "list", "watch", "patch"]},
    {"apiGroups": ["argoproj.io"], "resources": ["workflowtaskresults"], "verbs": ["create", "patch"]},
]


def image() -> str:
    return f"dihera.local/dihera:{package_version(Settings.from_environ())}"


def build(namespace: str, trials: int, parallelism: int, run_seconds: int, runner: Runner) -> Sweep:
    """The benchmark's sweep (workflows/python/kwok_plugin_sweep.py): trials on kwok nodes, the Workflow's own
    pods on the real node."""
    key, value = realnode.NODE_LABEL
    placement = {"nodeSelector": {key: value}, "tolerations": [realnode.NODE_TAINT]}
    return EXAMPLE.build(  # type: ignore[no-any-return]
        namespace, image(), trials, parallelism, run_seconds, runner.value, placement, account=ACCOUNT
    )


def new_namespace(api: client.ApiClient, tag: str, runner: Runner | None = None) -> str:
    core, rbac = client.CoreV1Api(api), client.RbacAuthorizationV1Api(api)
    ns = f"{PREFIX}-{tag}-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": ns, "labels": {"dihera.io/test": "true"}}})
    core.create_namespaced_service_account(ns, {"metadata": {"name": ACCOUNT}})
    rbac.create_namespaced_role(ns, {"metadata": {"name": ACCOUNT}, "rules": RULES})
    rbac.create_namespaced_role_binding(ns, {
        "metadata": {"name": ACCOUNT},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": ACCOUNT},
        "subjects": [{"kind": "ServiceAccount", "name": ACCOUNT, "namespace": ns}],
    })  # fmt: skip
    if runner is Runner.PLUGIN:  # the plugin's ConfigMap, account and Role; the sweep's token and agent Role
        for obj in plugin_manifests(ns, image(), sweep_account=ACCOUNT):
            apply_object(api, obj, ns)
    return ns


def delete_and_wait(api: client.ApiClient, ns: str, timeout: float = 300) -> None:
    core = client.CoreV1Api(api)
    core.delete_namespace(ns)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not [n for n in core.list_namespace().items if n.metadata.name == ns]:
            return
        time.sleep(1)
    print(f"[bench_sweep] namespace {ns} still not gone after {timeout:.0f}s", file=sys.stderr)


class JobWatch:
    """Every DIJob of a namespace: when the watch first saw it and when it first saw it ended."""

    def __init__(self, api: client.ApiClient, ns: str) -> None:
        self.seen: dict[str, float] = {}
        self.ended: dict[str, float] = {}
        self.phases: dict[str, str] = {}
        self.changed = threading.Condition()
        self._watch = watch.Watch()
        self._stopped = False
        custom = client.CustomObjectsApi(api)
        args = (custom.list_namespaced_custom_object, GROUP, VERSION, ns, PLURAL)
        self._thread = threading.Thread(target=self._run, args=args, daemon=True)
        self._thread.start()

    def _run(self, *args: Any) -> None:
        try:
            self._follow(*args)
        except Exception as err:
            if not self._stopped:
                print(f"[bench_sweep] DIJob watch ended: {err!r}", file=sys.stderr)

    def _follow(self, *args: Any) -> None:
        for event in self._watch.stream(*args, timeout_seconds=3600):
            obj, now = event["object"], time.monotonic()
            name, phase = obj["metadata"]["name"], (obj.get("status") or {}).get("phase", "")
            with self.changed:
                self.seen.setdefault(name, now)
                self.phases[name] = phase
                if phase in ENDED:
                    self.ended.setdefault(name, now)
                self.changed.notify_all()

    def alive(self) -> int:
        with self.changed:
            return len(self.seen) - len(self.ended)

    def most_alive(self) -> int:
        """The most DIJobs alive at once: seen and not yet ended."""
        edges = sorted([(t, 1) for t in self.seen.values()] + [(t, -1) for t in self.ended.values()])
        live = most = 0
        for _, step in edges:
            live += step
            most = max(most, live)
        return most

    def stop(self) -> None:
        self._stopped = True
        self._watch.stop()


def plain(api: client.ApiClient, sweep: Sweep, parallelism: int, timeout: float) -> tuple[float, int, str]:
    """The trials' DIJobs created by this script, ``parallelism`` at a time."""
    ns = new_namespace(api, "plain")
    jobs, w = JobStore(api), JobWatch(api, ns)
    manifests = []
    for trial in sweep.trials:
        manifest = sweep.trial_manifest(trial)
        manifest["metadata"]["namespace"] = ns
        manifests.append(manifest)
    cpu, t0 = cpu_seconds(), time.monotonic()
    deadline = t0 + timeout
    pending = list(manifests)
    with w.changed:
        while pending or len(w.ended) < len(manifests):
            if time.monotonic() > deadline:
                raise SystemExit(f"plain script: {len(w.ended)} of {len(manifests)} DIJobs ended in {timeout:.0f}s")
            created = len(manifests) - len(pending)
            while pending and created - len(w.ended) < parallelism:
                jobs.create(pending.pop(0))
                created += 1
            w.changed.wait(1.0)
    wall = max(w.ended.values()) - t0
    used = breakdown(cpu, cpu_seconds())
    w.stop()
    failed = [n for n, p in w.phases.items() if p != "Succeeded"]
    if failed:
        raise SystemExit(f"plain script: DIJobs not Succeeded: {failed[:5]}")
    most = w.most_alive()
    delete_and_wait(api, ns)
    return wall, most, used


def _most_open(intervals: list[tuple[str, str]]) -> int:
    edges = sorted([(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals], key=lambda x: (x[0], x[1]))
    live = most = 0
    for _, step in edges:
        live += step
        most = max(most, live)
    return most


def via_sweep(
    api: client.ApiClient, trials: int, parallelism: int, run_seconds: int, runner: Runner, timeout: float
) -> tuple[float, int | None, int, str]:
    """The sweep's Workflow: wall time, most trial nodes (resource templates) and most DIJobs alive at once, CPU."""
    ns = new_namespace(api, "argo", runner)
    sweep = build(ns, trials, parallelism, run_seconds, runner)
    body = build_sweep_workflow(sweep).to_dict()
    custom, w = client.CustomObjectsApi(api), JobWatch(api, ns)
    cpu, t0 = cpu_seconds(), time.monotonic()
    custom.create_namespaced_custom_object("argoproj.io", "v1alpha1", ns, "workflows", body)
    phase, wf = "", {}
    stream = watch.Watch().stream(  # the sweep's Workflow only: each trial's DIJob has a Workflow too
        custom.list_namespaced_custom_object, "argoproj.io", "v1alpha1", ns, "workflows",
        field_selector=f"metadata.name={sweep.name}", timeout_seconds=int(timeout),
    )  # fmt: skip
    for event in stream:
        wf = event["object"]
        phase = (wf.get("status") or {}).get("phase", "")
        if phase in ("Succeeded", "Failed", "Error"):
            break
    wall = time.monotonic() - t0
    used = breakdown(cpu, cpu_seconds())
    w.stop()
    if phase != "Succeeded":
        nodes = (wf.get("status") or {}).get("nodes") or {}
        bad = [(n["displayName"], n.get("message")) for n in nodes.values() if n["phase"] in ("Failed", "Error")]
        raise SystemExit(f"sweep: Workflow phase {phase or 'unknown'} after {wall:.0f}s; failed nodes {bad[:5]}")
    nodes = wf["status"]["nodes"].values()
    trial_nodes = [n for n in nodes if n.get("templateName") == "trial"]
    if len(trial_nodes) != trials or any(n["phase"] != "Succeeded" for n in trial_nodes):
        raise SystemExit(f"sweep: {len(trial_nodes)} trial nodes, not all Succeeded")
    (summary,) = [n for n in nodes if n.get("templateName") == "summary"]
    outputs = {p["name"]: p.get("value", "") for p in (summary.get("outputs") or {}).get("parameters") or []}
    rows = outputs.get("results-csv", "").strip().count("\n")  # a header, then a row per trial
    if rows != trials or "best" not in outputs:  # kwok's trials report no metric: the best is {}
        raise SystemExit(f"sweep: the summary's results-csv has {rows} rows of {trials}; outputs {sorted(outputs)}")
    most_nodes = (
        _most_open([(n["startedAt"], n["finishedAt"]) for n in trial_nodes]) if runner is Runner.RESOURCE else None
    )
    most_jobs = w.most_alive()
    first, last = min(w.seen.values()) - t0, max(w.ended.values()) - t0
    print(
        f"[bench_sweep] sweep's time: {first:.1f} s to its first DIJob, {last - first:.1f} s of trials, "
        f"{wall - last:.1f} s from the last trial's end to the Workflow's",
        file=sys.stderr,
    )
    delete_and_wait(api, ns)
    return wall, most_nodes, most_jobs, used


@contextmanager
def controller(kubeconfig: str) -> Iterator[None]:
    (REPO / ".devcluster" / "logs").mkdir(parents=True, exist_ok=True)
    log = open(REPO / ".devcluster" / "logs" / "bench-sweep-controller.log", "ab")  # noqa: SIM115
    argv = [DIHERA, "controller", "--kubeconfig", kubeconfig, "-n", f"{PREFIX}-*", "--standalone"]
    proc = subprocess.Popen([*argv, "--metrics-port", "0", "--health-port", "0"], stdout=log, stderr=log)
    try:
        yield
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--parallelism", type=int, default=10)
    parser.add_argument("--run-seconds", type=int, default=30, help="how long each trial's replica runs")
    parser.add_argument("--timeout", type=float, default=3600)
    parser.add_argument("--runner", choices=[r.value for r in Runner], default=Runner.PLUGIN.value)
    args = parser.parse_args()
    kubeconfig = os.environ.get("KUBECONFIG") or str(REPO / ".devcluster" / "kubeconfig")
    install_crd(kubeconfig)
    api = config.new_client_from_config(config_file=kubeconfig)
    size = f"{args.trials} trials, parallelism {args.parallelism}, {args.run_seconds} s each"
    with controller(kubeconfig):
        runner = Runner(args.runner)
        s_wall, s_nodes, s_jobs, s_cpu = via_sweep(
            api, args.trials, args.parallelism, args.run_seconds, runner, args.timeout
        )
        print(f"[bench_sweep] sweep CPU: {s_cpu}", file=sys.stderr)
        reference = build("unused", args.trials, args.parallelism, args.run_seconds, runner)
        p_wall, p_jobs, p_cpu = plain(api, reference, args.parallelism, args.timeout)
        print(f"[bench_sweep] plain script CPU: {p_cpu}", file=sys.stderr)
    print(f"sweep of {size}, runner {runner.value}")
    alive = f"most alive: {s_jobs} DIJobs" + (f", {s_nodes} trial nodes" if s_nodes is not None else "")
    print(f"  Argo Workflow (dihera.experiment.sweep)  {s_wall:8.1f} s  {alive}")
    print(f"  plain script (same DIJobs)               {p_wall:8.1f} s  most alive: {p_jobs} DIJobs")
    print(f"  ratio sweep / plain script               {s_wall / p_wall:8.2f}  (goal <= 1.10)")
    print(f"  CPU, sweep: {s_cpu}")
    print(f"  CPU, plain script: {p_cpu}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
