"""CartPole DQN as a DIJob on the real node vs the same job as plain local processes (figures, not asserted).

    python bench/bench_cartpole_realnode.py [--timeout 900]

1. workflows/cartpole-dqn.yaml (learner, evaluator, 2 collectors) through `dihera controller` and Argo
   on the real node, in the DI-engine image built here: seconds from the create call (`kubectl apply`)
   to every collector's first batch sent (each collector's `dihera-learner-seen` line: it heard the
   learner's beacon), to the first learner iteration (`dihera-progress`), to the stop value
   (`dihera-stop-value-reached`) and to the DIJob Succeeded, read from the pods' logs once a second;
2. then, in the same run and the same image on the same node, bench/bench_cartpole_local.py in one pod:
   the four replicas as plain processes (the reference's way, no Kubernetes between them);
3. the ratio of each figure: what the orchestration costs.

Needs $KUBECONFIG or .devcluster/kubeconfig with the local real node (make cluster-up); builds and
imports the DI-engine image if needed (ci/devcluster/dingimage.py). Runs its own controller on a
namespace ``dihera-test-cartbench-*``, deleted at the end. One run of each: CartPole's training time
varies run to run (the reference measured 21-74 s from connected to the stop value).
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

from kubernetes import client, config

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from crd import install_crd  # noqa: E402

from ci.devcluster import Cluster, Settings, realnode  # noqa: E402
from ci.devcluster.dingimage import ensure_ding_image  # noqa: E402
from dihera.kube.jobs import JobStore  # noqa: E402
from tests.integration.realjobs import job_logs, on_real_node, own_lines  # noqa: E402

DIHERA = str(Path(sys.executable).with_name("dihera"))
NAME = "cartpole-dqn"
COLLECTORS = 2
MARKS = ("every collector sent", "first learner iter", "stop value reached", "all exited")
LOCAL_LINE = re.compile(r"^\s+(every collector sent|first learner iter|stop value reached|all exited)\s+([\d.]+) s\b")


def dijob_run(api: client.ApiClient, ns: str, image: str, timeout: float) -> dict[str, float]:
    """Seconds from the create call to each mark, read from the pods' logs once a second."""
    seen: dict[str, float] = {}
    jobs = JobStore(api)
    doc = on_real_node("cartpole-dqn.yaml", ns, image, api)
    start = time.monotonic()
    jobs.create(doc)
    while time.monotonic() - start < timeout:
        now = time.monotonic() - start
        lines = [own_lines(log) for log in job_logs(api, ns, NAME).values()]
        if sum(any(x.startswith("dihera-learner-seen ") for x in log) for log in lines) == COLLECTORS:
            seen.setdefault("every collector sent", now)
        if any(x.startswith("dihera-progress ") for log in lines for x in log):
            seen.setdefault("first learner iter", now)
        if any(x.startswith("dihera-stop-value-reached ") for log in lines for x in log):
            seen.setdefault("stop value reached", now)
        phase = ((jobs.get(ns, NAME) or {}).get("status") or {}).get("phase")
        if phase in ("Succeeded", "Failed"):
            seen["all exited"] = now
            print(f"  DIJob {phase}")
            break
        time.sleep(1.0)
    return seen


def local_run(api: client.ApiClient, ns: str, image: str, timeout: float) -> dict[str, float]:
    """bench_cartpole_local.py in one pod on the real node (the image has DI-engine): its printed figures."""
    core = client.CoreV1Api(api)
    script = (REPO / "bench" / "bench_cartpole_local.py").read_text()
    core.create_namespaced_config_map(ns, {"metadata": {"name": "bench"}, "data": {"bench.py": script}})
    container = {
        "name": "main",
        "image": image,
        "imagePullPolicy": "Never",
        "command": ["python", "/bench/bench.py", "--package", "/opt/dihera-examples/cartpole"],
        "args": ["--ditask", "/opt/ding/bin/ditask", "--timeout", str(timeout)],
        "volumeMounts": [{"name": "bench", "mountPath": "/bench"}],
    }
    pod = {
        "metadata": {"name": "local"},
        "spec": {
            "restartPolicy": "Never",
            "nodeSelector": dict([realnode.NODE_LABEL]),
            "tolerations": [{**realnode.NODE_TAINT, "operator": "Equal"}],
            "containers": [container],
            "volumes": [{"name": "bench", "configMap": {"name": "bench"}}],
        },
    }
    core.create_namespaced_pod(ns, pod)
    deadline = time.monotonic() + timeout + 120
    while time.monotonic() < deadline:
        if core.read_namespaced_pod("local", ns).status.phase in ("Succeeded", "Failed"):
            break
        time.sleep(2.0)
    log = core.read_namespaced_pod_log("local", ns)
    print("  " + "\n  ".join(log.splitlines()[-16:]))
    return {m.group(1): float(m.group(2)) for line in log.splitlines() if (m := LOCAL_LINE.match(line))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--timeout", type=float, default=900.0)
    args = parser.parse_args()
    settings = Settings.from_environ()
    dev = Cluster(settings)
    kubeconfig = os.environ.get("KUBECONFIG") or str(dev.kubeconfig)
    socket = realnode.node_files(dev.state).containerd_socket
    report = ensure_ding_image(settings, socket, realnode.CONTAINERD_NAMESPACE, print)
    image = report.image.name
    install_crd(kubeconfig)
    api = config.new_client_from_config(config_file=kubeconfig)
    core = client.CoreV1Api(api)
    ns = f"dihera-test-cartbench-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": ns}})
    log = open(dev.state.root / "logs" / "bench-cartpole.log", "ab")  # noqa: SIM115
    argv = [DIHERA, "controller", "--kubeconfig", kubeconfig, "-n", ns, "--standalone", "--health-port", "0"]
    proc = subprocess.Popen([*argv, "--metrics-port", "0"], stdout=log, stderr=log)
    try:
        time.sleep(3)  # the namespace's default service account; the controller's watch
        print(f"cartpole DQN as a DIJob on the real node ({ns}):")
        orchestrated = dijob_run(api, ns, image, args.timeout)
        print("cartpole DQN as 4 local processes in one pod of the same image:")
        plain = local_run(api, ns, image, args.timeout)
        print(f"{'seconds from start to':<22} {'DIJob':>8} {'local':>8} {'ratio':>6}")
        for mark in MARKS:
            a, b = orchestrated.get(mark), plain.get(mark)
            ratio = f"{a / b:6.2f}" if a is not None and b else "     -"
            print(f"{mark:<22} {a or float('nan'):8.1f} {b or float('nan'):8.1f} {ratio}")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        core.delete_namespace(ns)
    return 0


if __name__ == "__main__":
    sys.exit(main())
