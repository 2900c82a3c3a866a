"""Collector autoscaling on the real node (issue 56, "Done when"): the project's example with 1 collector and
autoscaling up to 4, its collectors slowed (``DIHERA_COLLECT_DELAY``) so the learner starves: collectors are
added, the learner's data-wait fraction falls below its target, and the job reaches its stop value (Succeeded,
by DI-engine's evaluator or by ``trainingPolicy``'s target, whichever is first). Then a second, short job with a
slowed learner (``DIHERA_TRAIN_DELAY``) starting at 3 collectors: they are removed to the minimum, and the
trainingPolicy's iteration target ends it. Every change has an Event with its figures.

Needs the replicas' figures in ``status.training`` (the example reports them through the di-server: issue 56
item 1); without them the test fails saying so. Real-node minutes: about 3 (two CartPole runs).
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from kubernetes import client

from dihera.kube.jobs import JobStore
from tests.integration.autoscaled import FAST_BEHAVIOR, autoscaled_cartpole, collector_count, scale_events
from tests.integration.controllers import Controller
from tests.integration.realjobs import follow

pytestmark = [pytest.mark.cluster, pytest.mark.realnode]

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


def test_slow_collectors_are_added_to_and_a_slow_learner_s_removed(
    ding_image: str, controller: Controller, cluster: client.ApiClient, namespace: str
) -> None:
    jobs = JobStore(cluster)
    auto = {"minReplicas": 1, "maxReplicas": 4, "targetDataWaitFraction": TARGET_WAIT, "behavior": FAST_BEHAVIOR}
    starving = autoscaled_cartpole(
        namespace, ding_image, cluster, collectors=1, autoscaling=auto, collect_delay=0.3, training_policy=STOP,
        name="starving",
    )  # fmt: skip
    jobs.create(starving)
    watch = Watch(cluster, namespace, "starving")
    run = follow(cluster, namespace, "starving", timeout=420, on_tick=watch.tick)
    added = [m for r, m in scale_events(cluster, namespace, "starving") if r == "CollectorsAdded"]
    assert run.status["phase"] == "Succeeded", (run.phases, run.status.get("conditions"))
    assert watch.most > 1 and added, (watch.most, added)
    assert all("waited for data" in m and "target 30%" in m for m in added), added
    assert watch.waits_after_change and min(watch.waits_after_change) < TARGET_WAIT, watch.waits_after_change
    assert run.status["restarts"] == 0, run.status

    saturated = {**auto, "targetReplayRatio": 4.0}
    slow_learner = autoscaled_cartpole(
        namespace, ding_image, cluster, collectors=3, autoscaling=saturated, train_delay=0.5,
        training_policy={"target": {"metric": "iteration", "value": 150}}, name="saturated",
    )  # fmt: skip
    jobs.create(slow_learner)
    watch = Watch(cluster, namespace, "saturated")
    run = follow(cluster, namespace, "saturated", timeout=240, on_tick=watch.tick)
    removed = [m for r, m in scale_events(cluster, namespace, "saturated") if r == "CollectorsRemoved"]
    assert watch.least == 1 and removed, (watch.least, removed)
    assert all("the learner is saturated" in m and "replay ratio" in m for m in removed), removed
    assert run.status["phase"] == "Succeeded", (run.phases, run.status.get("conditions"))
    assert run.status["conditions"][-1]["reason"] in ("TrainingTargetReached", "JobSucceeded"), run.status
