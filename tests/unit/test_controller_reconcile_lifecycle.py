"""The reconciler's lifecycle wiring, with in-memory stores: TTL deletion, timed wake-ups, success policy cleanup."""

from __future__ import annotations

from typing import Any, cast

import pytest

from dihera.controller.metrics import Metrics
from dihera.controller.reconcile import Reconciler
from dihera.render import RenderSettings
from tests.unit.test_controller_reconcile import LIVE, NAME, NS, Cluster, dijob

T0, T1 = "2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z"


class LifecycleCluster(Cluster):
    def __init__(self, **spec: Any) -> None:
        body = dijob(2, 1, 1)
        body["spec"].update(spec)
        super().__init__(body, LIVE, 1)
        self.deleted: list[tuple[str, str, str | None]] = []
        self.stopped: list[str] = []
        self.pods_deleted: list[str] = []
        self.order: list[str] = []

    def patch_status(self, namespace: str, name: str, ops: list[dict[str, Any]]) -> dict[str, Any]:
        written = super().patch_status(namespace, name, ops)
        self.order.append(f"status {self.body['status']['phase']}")
        return written

    def delete(self, namespace: str, name: str, uid: str | None = None) -> bool:
        self.deleted.append((namespace, name, uid))
        return True

    def shutdown_workflow(self, namespace: str, name: str) -> None:
        self.stopped.append(name)
        self.order.append("shutdown Workflow")

    def delete_pod(self, namespace: str, name: str) -> None:
        self.pods_deleted.append(name)
        self.order.append("delete pod")


def reconcile(cluster: Cluster, now: str = T1) -> float | None:
    store = cast(Any, cluster)
    return Reconciler(store, store, store, RenderSettings(), Metrics(), store, clock=lambda: now).reconcile(NS, NAME)


def finished(cluster: LifecycleCluster, phase: str = "Succeeded", at: str = T0) -> LifecycleCluster:
    cluster.body["status"].update(phase=phase, completionTimestamp=at)
    return cluster


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_a_finished_job_past_its_ttl_is_deleted_by_uid(phase: str) -> None:
    cluster = finished(LifecycleCluster(ttlSecondsAfterFinished=60), phase)
    assert reconcile(cluster) is None
    assert cluster.deleted == [(NS, NAME, "job-uid")]


def test_a_finished_job_before_its_ttl_asks_to_be_woken_then() -> None:
    cluster = finished(LifecycleCluster(ttlSecondsAfterFinished=90))
    assert reconcile(cluster) == 30.0
    assert cluster.deleted == []


def test_a_finished_job_without_ttl_is_kept() -> None:
    cluster = finished(LifecycleCluster())
    assert reconcile(cluster) is None and cluster.deleted == []


def test_a_running_job_with_a_ttl_is_not_deleted() -> None:
    cluster = LifecycleCluster(ttlSecondsAfterFinished=0)
    reconcile(cluster)
    assert cluster.deleted == []


def test_a_running_job_asks_to_be_woken_at_its_deadline() -> None:
    cluster = LifecycleCluster(activeDeadlineSeconds=90)
    cluster.body["status"]["startTime"] = T0
    assert reconcile(cluster) == 30.0
    assert cluster.statuses[-1]["phase"] == "Running"


def test_past_its_deadline_the_job_fails_and_its_pods_are_stopped() -> None:
    cluster = LifecycleCluster(activeDeadlineSeconds=30)
    cluster.body["status"]["startTime"] = T0
    assert reconcile(cluster) is None
    assert cluster.statuses[-1]["phase"] == "Failed"
    assert ("DeadlineExceeded" in [r for r, _ in cluster.events]) and cluster.stopped == [NAME]
    assert sorted(cluster.pods_deleted) == sorted(f"{NAME}-{r.task}-{r.index}" for r in LIVE.replicas)


def test_the_ending_is_written_before_any_replica_is_stopped() -> None:
    """Stopping the Workflow makes Argo fail it; the job's Succeeded (or DeadlineExceeded) is recorded first."""
    cluster = LifecycleCluster(activeDeadlineSeconds=30)
    cluster.body["status"]["startTime"] = T0
    reconcile(cluster)
    assert cluster.order[0] == "status Failed" and cluster.order[1] == "shutdown Workflow"
    assert set(cluster.order[2:]) == {"delete pod"}
