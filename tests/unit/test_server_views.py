"""What the di-server's read routes answer, computed from cached objects."""

from __future__ import annotations

from typing import Any

from dihera import load_job, render
from dihera.constants import LABEL_POD
from dihera.kube.snapshot import JobSnapshot
from dihera.server import views
from tests.builders import job, task


def pod(name: str, host: str, created: str, phase: str, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {LABEL_POD: host}, "creationTimestamp": created}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:09Z"
    return {"metadata": meta, "status": {"phase": phase}}


def test_each_replica_shows_its_newest_live_pod() -> None:
    pods = [
        pod("a-1", "dqn-collector-0", "2026-01-01T00:00:05Z", "Running"),
        pod("a-0", "dqn-collector-0", "2026-01-01T00:00:01Z", "Failed"),
        pod("b-1", "dqn-collector-1", "2026-01-01T00:00:08Z", "Running", deleting=True),
        pod("b-0", "dqn-collector-1", "2026-01-01T00:00:02Z", "Running"),
        {"metadata": {"name": "stray", "labels": {}}},
    ]
    current = views.current_pods(pods)
    assert {host: p["metadata"]["name"] for host, p in current.items()} == {
        "dqn-collector-0": "a-1",
        "dqn-collector-1": "b-0",  # a pod being deleted loses to a live one, however new
    }


def test_rows_and_addresses_follow_the_membership_in_rank_order() -> None:
    loaded = load_job({**job(task("learner"), task("collector", replicas=2), name="dqn"),
                       "metadata": {"name": "dqn", "namespace": "team-a"}})
    cached = JobSnapshot(loaded.to_manifest(), render(loaded).configmap,
                       (pod("p", "dqn-collector-1", "2026-01-01T00:00:01Z", "Pending"),))
    rows = views.replica_rows(cached, "cluster.local")
    assert [(r.rank, r.name, r.pod, r.phase) for r in rows] == [
        (0, "learner-0", None, None), (1, "collector-0", None, None), (2, "collector-1", "p", "Pending")
    ]
    assert views.addresses(cached, "cluster.local") == [r.fqdn for r in rows]
    assert rows[2].fqdn == "dqn-collector-1.di-dqn.team-a.svc.cluster.local"
    before_start = JobSnapshot(cached.body, None, ())
    assert views.replica_rows(before_start, "cluster.local") == [] and views.addresses(before_start, "x") == []
