"""The example (workflows/cartpole-dqn.yaml) with collector autoscaling, one side slowed: the manifest the
real-node autoscaling test and bench/bench_autoscaling.py run, and how they read what autoscaling did.

The example's ``DIHERA_COLLECT_DELAY`` / ``DIHERA_TRAIN_DELAY`` (examples/cartpole/README.md) make the learner
starve (slow collectors) or saturate (a slow learner); its replicas report ``status.training`` through the
di-server (issue 56 item 1), which autoscaling reads.
"""

from __future__ import annotations

import copy
import time
from typing import Any

import pytest
from kubernetes import client

from dihera.kube.jobs import JobStore
from tests.integration.jobs import dijob_events
from tests.integration.realjobs import on_real_node

__all__ = [
    "FAST_BEHAVIOR",
    "FIGURES_BOUND",
    "STOP",
    "TARGET_WAIT",
    "Watch",
    "autoscaled_cartpole",
    "collector_count",
    "scale_events",
]

#: Windows and periods short enough for a CartPole run of a minute or two.
FAST_BEHAVIOR = {
    "scaleUp": {"stabilizationWindowSeconds": 10, "policies": [{"type": "Pods", "value": 3, "periodSeconds": 10}]},
    "scaleDown": {"stabilizationWindowSeconds": 10, "policies": [{"type": "Pods", "value": 3, "periodSeconds": 10}]},
}


def _env(container: dict[str, Any], **values: str) -> None:
    env = [e for e in container.get("env", []) if e["name"] not in values]
    container["env"] = env + [{"name": k, "value": v} for k, v in values.items()]


def autoscaled_cartpole(
    namespace: str,
    image: str,
    cluster: client.ApiClient,
    *,
    collectors: int,
    autoscaling: dict[str, Any] | None,
    collect_delay: float = 0.0,
    train_delay: float = 0.0,
    training_policy: dict[str, Any] | None = None,
    name: str = "cartpole-dqn",
) -> dict[str, Any]:
    """workflows/cartpole-dqn.yaml on the real node named ``name``, its collectors ``collectors`` (with
    ``autoscaling``; None: a fixed count), the delays set, ``training_policy`` added; no artifacts (shorter)."""
    doc = copy.deepcopy(on_real_node("cartpole-dqn.yaml", namespace, image, cluster))
    doc["metadata"]["name"] = name
    doc["spec"].pop("artifacts", None)
    if training_policy is not None:
        doc["spec"]["trainingPolicy"] = training_policy
    for task in doc["spec"]["tasks"]:
        task["template"] = copy.deepcopy(task["template"])  # the workflow's tasks may share one (YAML anchors)
        container = task["template"]["spec"]["containers"][0]
        if task["type"] == "collector":
            task["replicas"] = collectors
            if autoscaling is not None:
                task["autoscaling"] = autoscaling
            if collect_delay:
                _env(container, DIHERA_COLLECT_DELAY=str(collect_delay))
        if task["type"] == "learner" and train_delay:
            _env(container, DIHERA_TRAIN_DELAY=str(train_delay))
    return doc


def collector_count(body: dict[str, Any]) -> int:
    return next(int(t["replicas"]) for t in body["spec"]["tasks"] if t["type"] == "collector")


def scale_events(cluster: client.ApiClient, namespace: str, name: str) -> list[tuple[str, str]]:
    """The job's autoscaling Events (reason, message), CollectorsAdded and CollectorsRemoved."""
    return [(r, m) for r, m in dijob_events(cluster, namespace, name) if r in ("CollectorsAdded", "CollectorsRemoved")]


TARGET_WAIT = 0.3
STOP = {"target": {"metric": "evaluationReturn", "value": 195}}
#: seconds without status.training after the job is Running before the test says the figures are missing
FIGURES_BOUND = 120


class Watch:
    """What the test sees each second: the most collectors, the data-wait fractions after the last change."""

    def __init__(self, cluster: client.ApiClient, namespace: str, name: str) -> None:
        self.jobs, self.namespace, self.name = JobStore(cluster), namespace, name
        self.most = 0
        self.least = 10**6
        self.waits_after_change: list[float] = []
        self.running_since: float | None = None
        self.figures_seen = False

    def tick(self, status: dict[str, Any]) -> None:
        body = self.jobs.get(self.namespace, self.name) or {}
        count = collector_count(body) if body else 0
        if count > self.most:
            self.waits_after_change.clear()
        self.most, self.least = max(self.most, count), min(self.least, count)
        training = status.get("training") or {}
        if "dataWaitFraction" in training:
            self.figures_seen = True
            self.waits_after_change.append(float(training["dataWaitFraction"]))
        if status.get("phase") == "Running" and self.running_since is None:
            self.running_since = time.monotonic()
        if not self.figures_seen and self.running_since and time.monotonic() - self.running_since > FIGURES_BOUND:
            pytest.fail(f"no status.training.dataWaitFraction {FIGURES_BOUND} s after Running: the replicas' "
                        "figures are not reported (issue 56 item 1); autoscaling has nothing to read")  # fmt: skip
