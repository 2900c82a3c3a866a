"""Pod start latency on the real node vs a kwok node (figures printed, not asserted; 127.0.0.1 only).

    python bench/bench_realnode.py [--pods 10]

Creates pods one after another, each waited for: from the create call to the watch event showing the
pod Running. Real node: the local python image, `sleep 600`, the node's toleration and selector.
kwok: the same pod without them (it lands on a simulated node; nothing runs). Prints p50 / max per node
kind and the real node's process memory (RSS of kubelet, containerd, CoreDNS, shims).

Needs $KUBECONFIG or .devcluster/kubeconfig and a cluster with the real node (make cluster-up).
Works in a namespace ``dihera-test-nodebench-*``, deleted at the end.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from kubernetes import client, config, watch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ci.devcluster import realnode  # noqa: E402
from ci.devcluster.images import PYTHON_IMAGE  # noqa: E402

NODE_PROGRAMS = ("kubelet", "containerd", "coredns", "containerd-shim-runc-v2", "netns-forward")


def pod(name: str, real: bool) -> dict[str, Any]:
    container = {"name": "main", "image": PYTHON_IMAGE, "imagePullPolicy": "Never", "command": ["sleep", "600"]}
    spec: dict[str, Any] = {"terminationGracePeriodSeconds": 0, "containers": [container]}
    if real:
        spec["nodeSelector"] = dict([realnode.NODE_LABEL])
        spec["tolerations"] = [{**realnode.NODE_TAINT, "operator": "Equal"}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def start_latency(core: client.CoreV1Api, ns: str, name: str, real: bool) -> float:
    start = time.monotonic()
    core.create_namespaced_pod(ns, pod(name, real))
    w = watch.Watch()
    for event in w.stream(core.list_namespaced_pod, ns, field_selector=f"metadata.name={name}", timeout_seconds=120):
        if event["object"].status.phase == "Running":
            w.stop()
            return time.monotonic() - start
    raise RuntimeError(f"pod {name} not Running within 120s")


def node_memory_mib() -> dict[str, float]:
    rss: dict[str, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv0 = (entry / "cmdline").read_bytes().split(b"\0")[0].decode()
            status = (entry / "status").read_text()
        except OSError:
            continue
        program = os.path.basename(argv0)
        if program in NODE_PROGRAMS:
            kib = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:"))
            rss[program] = rss.get(program, 0.0) + kib / 1024
    return rss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=10)
    args = parser.parse_args()
    config.load_kube_config(os.environ.get("KUBECONFIG") or str(REPO / ".devcluster" / "kubeconfig"))
    core = client.CoreV1Api()
    ns = f"dihera-test-nodebench-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": ns}})
    try:
        time.sleep(2)  # the namespace's default service account
        for kind, real in (("real node", True), ("kwok node", False)):
            times = [start_latency(core, ns, f"{kind[:4]}-{i}", real) for i in range(args.pods)]
            print(
                f"{kind}: create -> Running over {args.pods} pods: "
                f"p50 {statistics.median(times):.2f}s, max {max(times):.2f}s, first {times[0]:.2f}s"
            )
        memory = node_memory_mib()
        total = sum(memory.values())
        detail = ", ".join(f"{k} {v:.0f}" for k, v in sorted(memory.items()))
        print(f"real node RSS with {args.pods} pods running: {total:.0f} MiB ({detail})")
    finally:
        core.delete_namespace(ns)


if __name__ == "__main__":
    main()
