"""Collector autoscaling vs fixed collector counts: time from apply to the stop value (figures, not asserted).

    python bench/bench_autoscaling.py [--fixed 1,2,3,4] [--collect-delay 0.6] [--train-delay 0.2] [--timeout 600]

The example (workflows/cartpole-dqn.yaml) on the real node, slowed as the real-node autoscaling test slows it
(``DIHERA_COLLECT_DELAY`` per collector batch, ``DIHERA_TRAIN_DELAY`` per learner step, both sleeps: with one
collector the learner starves), run once per configuration, one after the other on the same node:

1. autoscaling from 1 collector (``maxReplicas`` the largest fixed count; 10 s windows; data-wait target 0.3);
2. each fixed count of ``--fixed``.

For each: seconds from the create call to the stop value (the evaluator's ``dihera-stop-value-reached`` line, or
``trainingPolicy``'s return target 195) and to the DIJob Succeeded, and the most collectors it ran. Then the ratio
of autoscaling's time to the best and to the worst fixed count's (issue 56's goal: at most 1.10 of the best).

Autoscaling reads ``status.training``, which the replicas report through the di-server: the benchmark installs the
chart (its controller and di-server as pods on the real node, as test_real_node_chart does) watching a namespace
``dihera-test-autobench-*`` of its own, whose replicas run with the report right; all is removed at the end.
Needs $KUBECONFIG or .devcluster/kubeconfig with the local real node and the images built (make cluster-up).
CartPole's training time varies run to run (the reference measured 21-74 s from connected to the stop value):
one run each is a figure, not a verdict; ``--repeat`` runs each configuration more times and takes the median.
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

from kubernetes import client, config

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ci.devcluster import Cluster, Settings, realnode  # noqa: E402
from ci.devcluster.dingimage import ensure_ding_image  # noqa: E402
from ci.devcluster.images import package_version  # noqa: E402
from dihera.kube.jobs import JobStore  # noqa: E402
from tests.chart.helm import CHART  # noqa: E402
from tests.integration.autoscaled import (  # noqa: E402
    FAST_BEHAVIOR,
    TARGET_WAIT,
    autoscaled_cartpole,
    collector_count,
)
from tests.integration.realjobs import job_logs, own_lines  # noqa: E402
from tests.integration.releases import DIJOB_CRD, TIMEOUT, Release, read_crd, restore_crds  # noqa: E402
from tests.integration.servers import sa_token  # noqa: E402

#: The chart's values for the real node (the images built here), as test_real_node_chart installs it.
VALUES = CHART / "ci" / "realnode-values.yaml"
#: The replicas' service account: the report right (their figures reach status.training through the di-server).
ACCOUNT = "autobench"


def run_one(api: client.ApiClient, ns: str, doc: dict[str, Any], timeout: float) -> dict[str, float]:
    """Seconds from the create call to the stop value and to the end, and the most collectors seen."""
    jobs, name = JobStore(api), doc["metadata"]["name"]
    start = time.monotonic()
    jobs.create(doc)
    seen: dict[str, float] = {"collectors": float(collector_count(doc))}
    while time.monotonic() - start < timeout:
        now = time.monotonic() - start
        body = jobs.get(ns, name) or {}
        if body:
            seen["collectors"] = max(seen["collectors"], float(collector_count(body)))
        lines = [own_lines(log) for log in job_logs(api, ns, name).values()]
        if "stop" not in seen and any(x.startswith("dihera-stop-value-reached ") for log in lines for x in log):
            seen["stop"] = now
        phase = (body.get("status") or {}).get("phase")
        if phase in ("Succeeded", "Failed"):
            seen["end"] = now
            seen.setdefault("stop", now)  # the trainingPolicy's target may end it first
            print(f"  {name}: {phase} after {now:.1f} s, at most {seen['collectors']:.0f} collectors")
            break
        time.sleep(1.0)
    jobs.delete(ns, name)
    return seen


def configurations(
    fixed: list[int], collect: float, train: float, ns: str, image: str, api: client.ApiClient
) -> dict[str, Any]:
    stop = {"target": {"metric": "evaluationReturn", "value": 195}}
    auto = {"minReplicas": 1, "maxReplicas": max(fixed), "targetDataWaitFraction": TARGET_WAIT,
            "behavior": FAST_BEHAVIOR}  # fmt: skip
    delays = {"collect_delay": collect, "train_delay": train, "training_policy": stop}
    docs = {"autoscaling": autoscaled_cartpole(ns, image, api, collectors=1, autoscaling=auto, name="auto", **delays)}
    for n in fixed:
        docs[f"fixed {n}"] = autoscaled_cartpole(ns, image, api, collectors=n, autoscaling=None, name=f"fixed-{n}",
                                                 **delays)  # fmt: skip
    for doc in docs.values():
        for task in doc["spec"]["tasks"]:
            task["template"]["spec"]["serviceAccountName"] = ACCOUNT
    return docs


def report(results: dict[str, list[dict[str, float]]]) -> None:
    median = {k: statistics.median(r["stop"] for r in runs if "stop" in r) for k, runs in results.items() if runs}
    print(f"{'configuration':<14} {'to stop value':>14} {'collectors':>11}")
    for key, runs in results.items():
        most = max(r["collectors"] for r in runs)
        print(f"{key:<14} {median.get(key, float('nan')):12.1f} s {most:11.0f}")
    fixed = {k: v for k, v in median.items() if k.startswith("fixed")}
    if "autoscaling" in median and fixed:
        best, worst = min(fixed, key=fixed.__getitem__), max(fixed, key=fixed.__getitem__)
        print(f"autoscaling / best fixed ({best}): {median['autoscaling'] / fixed[best]:.2f} (goal <= 1.10)")
        print(f"autoscaling / worst fixed ({worst}): {median['autoscaling'] / fixed[worst]:.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fixed", default="1,2,3,4", help="the fixed collector counts to compare with")
    parser.add_argument("--collect-delay", type=float, default=0.6, help="DIHERA_COLLECT_DELAY of the collectors")
    parser.add_argument("--train-delay", type=float, default=0.2, help="DIHERA_TRAIN_DELAY of the learner")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args()
    fixed = [int(n) for n in args.fixed.split(",")]
    settings = Settings.from_environ()
    dev = Cluster(settings)
    kubeconfig = Path(os.environ.get("KUBECONFIG") or str(dev.kubeconfig))
    socket = realnode.node_files(dev.state).containerd_socket
    image = ensure_ding_image(settings, socket, realnode.CONTAINERD_NAMESPACE, print).image.name
    api = config.new_client_from_config(config_file=str(kubeconfig))
    core = client.CoreV1Api(api)
    ns = f"dihera-test-autobench-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": ns}})
    release = Release.new("dihera-autobench", kubeconfig)
    before = read_crd(api, DIJOB_CRD)
    try:
        time.sleep(3)  # the namespace's default service account
        sa_token(api, ns, ACCOUNT, ["get"], report=True)  # the replicas report their figures with it
        release.restricted_namespace(api)
        release.must(
            "install", release.name, str(CHART), "-f", str(VALUES), "--set", f"image.tag={package_version(settings)}",
            "--set", f"watchNamespaces={{{ns}}}", "--create-namespace", "--take-ownership", "--wait",
            "--timeout", TIMEOUT,
        )  # fmt: skip
        print(f"CartPole DQN to the stop value, collectors slowed {args.collect_delay} s per batch, the learner "
              f"{args.train_delay} s per step; the chart's controller and di-server ({ns}):")  # fmt: skip
        results: dict[str, list[dict[str, float]]] = {}
        for _ in range(args.repeat):
            for key, doc in configurations(fixed, args.collect_delay, args.train_delay, ns, image, api).items():
                results.setdefault(key, []).append(run_one(api, ns, doc, args.timeout))
                time.sleep(5)  # the last job's pods go before the next starts
        report(results)
    finally:
        release.remove(api)
        restore_crds(api, {DIJOB_CRD: before})
        core.delete_namespace(ns)
    return 0


if __name__ == "__main__":
    sys.exit(main())
