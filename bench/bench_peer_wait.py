"""What the peer wait costs a replica whose peers are up (figures printed, not asserted; 127.0.0.1 only).

    python bench/bench_peer_wait.py [--runs 8] [--compare-image NAME ...]

The replica is rank 1 of a rendered two-replica DIJob (its ConfigMap and headless Service created as
the controller would); rank 0 runs already (`sleep`, on the real node). Then rank 1's pod is created
`--runs` times in each variant, in turn: with the `dihera-wait-peers` init container exactly as
rendered (the project's image, built here), the same without its CPU limit, the same container
running `true` instead (what any init container costs: the kubelet's cycle), and without any; each
time from the create call to the watch event showing its main container running, then the pod is
deleted. `--compare-image` adds a variant per image given: the same container from another build of
the project's image already in the node's containerd (e.g. the previous commit's, tagged aside with
`ctr images tag`), for a before/after in one run. Prints p50 / min / max per variant, each one's cost
over "without" (difference of the medians), and what the wait container said (its own measured wait).

Needs $KUBECONFIG or .devcluster/kubeconfig and a cluster with the real node (make cluster-up).
Works in a namespace ``dihera-test-peerbench-*``, deleted at the end.
"""

from __future__ import annotations

import argparse
import copy
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
from ci.devcluster.images import DIHERA_IMAGE, PYTHON_IMAGE, package_version  # noqa: E402
from ci.devcluster.settings import Settings  # noqa: E402
from dihera import RenderedJob, RenderSettings, load_job, render  # noqa: E402
from dihera.constants import LABEL_JOB, PEER_WAIT_CONTAINER  # noqa: E402
from dihera.naming import hostname, service_name  # noqa: E402

JOB = "bench"
MAIN = {"name": "main", "image": PYTHON_IMAGE, "imagePullPolicy": "Never", "command": ["sleep", "600"]}


def rendered_job(namespace: str) -> RenderedJob:
    image = f"{DIHERA_IMAGE}:{package_version(Settings.from_environ())}"
    tasks = [{"type": "none", "name": name, "template": {"spec": {"containers": [MAIN]}}} for name in ("a", "b")]
    manifest = {"apiVersion": "diengine.opendilab.org/v2alpha1", "kind": "DIJob", "metadata": {"name": JOB},
                "spec": {"tasks": tasks}}  # fmt: skip
    settings = RenderSettings(peer_wait_image=image, peer_wait_image_pull_policy="Never")
    return render(load_job(manifest, namespace=namespace), settings)


def wait_container(rendered: RenderedJob, rank: int) -> dict[str, Any]:
    """The rendered init container of task b's replica, with Argo's parameter substituted."""
    template = next(t for t in rendered.workflow["spec"]["templates"] if t["name"] == "b")
    wait = copy.deepcopy(template["initContainers"][0])
    assert wait["name"] == PEER_WAIT_CONTAINER
    for env in wait["env"]:
        if env.get("value") == "{{inputs.parameters.rank}}":
            env["value"] = str(rank)
    return dict(wait)


def replica_pod(name: str, task: str, init: list[dict[str, Any]]) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "hostname": hostname(JOB, task, 0),
        "subdomain": service_name(JOB),
        "terminationGracePeriodSeconds": 0,
        "nodeSelector": dict([realnode.NODE_LABEL]),
        "tolerations": [{**realnode.NODE_TAINT, "operator": "Equal"}],
        "initContainers": init,
        "containers": [MAIN],
    }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {LABEL_JOB: JOB}}, "spec": spec}


def main_running(pod: client.V1Pod) -> bool:
    return any(s.name == "main" and s.state.running for s in pod.status.container_statuses or [])


def create_to_main(core: client.CoreV1Api, ns: str, body: dict[str, Any]) -> float:
    name = body["metadata"]["name"]
    w = watch.Watch()
    start = time.monotonic()
    core.create_namespaced_pod(ns, body)
    for event in w.stream(core.list_namespaced_pod, ns, field_selector=f"metadata.name={name}", timeout_seconds=180):
        if main_running(event["object"]):
            w.stop()
            return time.monotonic() - start
    raise RuntimeError(f"pod {name}: main container not running within 180s")


def delete_and_wait(core: client.CoreV1Api, ns: str, name: str) -> None:
    core.delete_namespaced_pod(name, ns, grace_period_seconds=0)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if not [p for p in core.list_namespaced_pod(ns).items if p.metadata.name == name]:
            return
        time.sleep(0.2)
    raise RuntimeError(f"pod {name} not gone within 120s")


def summary(label: str, times: list[float]) -> str:
    return f"{label}: p50 {statistics.median(times):.2f}s, min {min(times):.2f}s, max {max(times):.2f}s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument(
        "--compare-image",
        action="append",
        default=[],
        metavar="NAME",
        help="another build of the project's image in the node's containerd (repeatable)",
    )
    args = parser.parse_args()
    config.load_kube_config(os.environ.get("KUBECONFIG") or str(REPO / ".devcluster" / "kubeconfig"))
    core = client.CoreV1Api()
    ns = f"dihera-test-peerbench-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": ns}})
    try:
        time.sleep(2)  # the namespace's default service account
        rendered = rendered_job(ns)
        core.create_namespaced_config_map(ns, rendered.configmap)
        core.create_namespaced_service(ns, rendered.service)
        create_to_main(core, ns, replica_pod("rank0", "a", []))  # the peer, up for the whole run
        wait = wait_container(rendered, 1)
        uncapped = {
            **wait,
            "resources": {**wait["resources"], "limits": {"memory": wait["resources"]["limits"]["memory"]}},
        }
        variants = {  # where the cost comes from: the kubelet's init container cycle, or the process in it
            "with the wait": [wait],
            "with the wait, no CPU limit": [uncapped],
            **{f"with the wait from {image}": [{**wait, "image": image}] for image in args.compare_image},
            "with an init container running `true` (same image)": [{**wait, "command": ["true"]}],
            "without": [],
        }
        times: dict[str, list[float]] = {label: [] for label in variants}
        said: list[str] = []
        for i in range(args.runs + 1):  # the first round warms up (page cache, DNS cache) and is not counted
            for label, init in variants.items():
                name = f"rank1-{list(variants).index(label)}-{i}"
                took = create_to_main(core, ns, replica_pod(name, "b", init))
                if init == variants["with the wait"]:
                    said.append(core.read_namespaced_pod_log(name, ns, container=PEER_WAIT_CONTAINER).strip())
                if i:
                    times[label].append(took)
                delete_and_wait(core, ns, name)
        print(f"rank 1 of a 2-replica job, rank 0 up; pod create -> main container running, {args.runs} runs each:")
        for label, values in times.items():
            print("  " + summary(label, values))
        base = statistics.median(times["without"])
        for label, values in times.items():
            if label != "without":
                print(f"  cost of '{label}' (difference of the medians): {statistics.median(values) - base:+.2f}s")
        print(f"  the wait container said (last run): {said[-1]}")
    finally:
        core.delete_namespace(ns)


if __name__ == "__main__":
    main()
