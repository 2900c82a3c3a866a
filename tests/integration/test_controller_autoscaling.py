"""Collector autoscaling and a training policy on the local control plane (kwok nodes): the test plays the
replicas by writing ``status.training`` series onto a running DIJob (as the di-server does from their reports),
and the controller (a subprocess, the chart's ServiceAccount) adds collectors while the learner starves, removes
them while it is saturated, each change with an Event carrying its figures, then ends the job when the return
reaches the trainingPolicy's target.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from kubernetes import client

from dihera.kube.jobs import JobStore
from dihera.schema import GROUP, PLURAL, VERSION
from tests.integration.conftest import Poll
from tests.integration.controllers import Controller
from tests.integration.jobs import dijob_events, manifest, task

pytestmark = pytest.mark.cluster
NAME = "autoscaled"
#: Short windows and generous rate policies, so the test sees each change within seconds.
AUTOSCALING = {
    "minReplicas": 1,
    "maxReplicas": 3,
    "targetDataWaitFraction": 0.2,
    "targetReplayRatio": 1.0,
    "staleAfterSeconds": 30,
    "behavior": {
        "scaleUp": {"stabilizationWindowSeconds": 4, "policies": [{"type": "Pods", "value": 4, "periodSeconds": 5}]},
        "scaleDown": {"stabilizationWindowSeconds": 4, "policies": [{"type": "Pods", "value": 4, "periodSeconds": 5}]},
    },
}


def _autoscaled_status(jobs: JobStore, namespace: str) -> dict[str, Any] | None:
    """The job's status once its ``CollectorsAutoscaled`` condition is True, else None."""
    status = (jobs.get(namespace, NAME) or {}).get("status") or {}
    conditions = status.get("conditions") or []
    flags = [c["status"] for c in conditions if c["type"] == "CollectorsAutoscaled"]
    return dict(status) if flags == ["True"] else None


def _shown(cluster: client.ApiClient, namespace: str, *parts: str) -> str | None:
    """The job's Workflow's description (the Argo UI's), once it shows every one of ``parts``."""
    workflow = client.CustomObjectsApi(cluster).get_namespaced_custom_object(
        "argoproj.io", "v1alpha1", namespace, "workflows", NAME
    )
    description = str(workflow["metadata"].get("annotations", {}).get("workflows.argoproj.io/description", ""))
    return description if all(part in description for part in parts) else None


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Learner:
    """Writes ``status.training`` every second, as the di-server would from the learner's reports: the figures of
    :attr:`figures`, reported now."""

    def __init__(self, cluster: client.ApiClient, namespace: str) -> None:
        self._custom = client.CustomObjectsApi(cluster)
        self._namespace = namespace
        self.figures: dict[str, Any] = {}
        self._stop = threading.Event()

    def write(self) -> None:
        training = {**self.figures, "reportedAt": {"learner": _now()}}
        self._custom.patch_namespaced_custom_object_status(
            GROUP, VERSION, self._namespace, PLURAL, NAME, {"status": {"training": training}}
        )

    @contextmanager
    def reporting(self) -> Iterator[Learner]:
        def loop() -> None:
            while not self._stop.wait(1.0):
                with contextlib.suppress(client.ApiException):  # a lost race: the next second writes again
                    self.write()

        thread = threading.Thread(target=loop, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            thread.join(5)


def _collectors(jobs: JobStore, namespace: str) -> int:
    body = jobs.get(namespace, NAME) or {}
    return next(t["replicas"] for t in body["spec"]["tasks"] if t["type"] == "collector")


def _events(cluster: client.ApiClient, namespace: str, reason: str) -> list[str]:
    return [m for r, m in dijob_events(cluster, namespace, NAME) if r == reason]


def test_collectors_follow_the_learner_s_appetite_and_the_target_ends_the_job(
    controller: Controller, cluster: client.ApiClient, namespace: str, poll: Poll
) -> None:
    jobs = JobStore(cluster)
    collector = task("collector", 1, **{"sim.dihera.io/run-seconds": "600"})
    collector["autoscaling"] = AUTOSCALING
    learner = task("learner", **{"sim.dihera.io/run-seconds": "600"})
    policy = {"target": {"metric": "evaluationReturn", "value": 195}}
    jobs.create(manifest(NAME, namespace, learner, collector, trainingPolicy=policy))
    poll(lambda: ((jobs.get(namespace, NAME) or {}).get("status") or {}).get("phase") == "Running", 60, "Running")

    with Learner(cluster, namespace).reporting() as reports:
        # the learner starves: waits for data 80% of its time → 1 * 0.8 / 0.2 = 4 collectors, capped at 3
        reports.figures = {"iteration": 100, "dataWaitFraction": 0.8, "replayRatio": 4.0}
        poll(lambda: _collectors(jobs, namespace) == 3, 60, "3 collectors")
        added = poll(lambda: _events(cluster, namespace, "CollectorsAdded"), 30, "a CollectorsAdded Event")
        assert "collectors 1 → 3" in added[0] and "waited for data 80%" in added[0], added
        assert "autoscaling.maxReplicas is 3" in added[0], added
        # the Argo UI shows the figures: a sentence after the membership's in the Workflow's description
        shown = poll(
            lambda: _shown(cluster, namespace, "collector 3 (", "data wait 80%"), 30, "the figures in the Argo UI"
        )
        assert shown.startswith("4 replicas: learner 1, collector 3 (membership generation 2).\n\n"), shown
        assert "\n\nTraining: iteration 100, data wait 80%.\n\n" in shown, shown

        # saturated, 3x the samples it consumes: ceil(3 * 0.3 / 1) = 1 collector
        reports.figures = {"iteration": 400, "dataWaitFraction": 0.02, "replayRatio": 0.3}
        poll(lambda: _collectors(jobs, namespace) == 1, 90, "1 collector again")
        removed = poll(lambda: _events(cluster, namespace, "CollectorsRemoved"), 30, "a CollectorsRemoved Event")
        assert "collectors 3 → 1" in removed[0] and "replay ratio 0.3 (target 1)" in removed[0], removed
        # right after a change the series at the new count is empty (NoFigures, False) until the learner reports
        # again; then autoscaling acts on fresh figures again: True
        status = poll(lambda: _autoscaled_status(jobs, namespace), 30, "CollectorsAutoscaled True again")
        assert status["restarts"] == 0, status
        # a scale's rewrite of the description kept the figures; newer ones replace them (at most every 15 s)
        shown = poll(
            lambda: _shown(cluster, namespace, "collector 1 (", "iteration 400"), 40, "the newer figures in the Argo UI"
        )
        assert shown.startswith("2 replicas: learner 1, collector 1 (membership generation 3).\n\n"), shown

        # the evaluation return reaches the target: Succeeded, TrainingTargetReached
        evaluation = {"value": 197.0, "iteration": 900, "best": 197.0, "bestIteration": 900}
        reports.figures = {"iteration": 900, "dataWaitFraction": 0.1, "replayRatio": 1.0, "evaluation": evaluation}
        final = poll(
            lambda: (
                (s := ((jobs.get(namespace, NAME) or {}).get("status") or {})).get("phase") in ("Succeeded", "Failed")
                and s
            ),
            60,
            "the job ended",
        )
    assert final["phase"] == "Succeeded", final["conditions"][-1]
    assert final["conditions"][-1]["reason"] == "TrainingTargetReached", final["conditions"][-1]
    assert poll(lambda: _events(cluster, namespace, "TrainingTargetReached"), 30, "its Event")
