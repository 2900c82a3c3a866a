"""What the di-server's read routes answer, computed from cached objects."""

from __future__ import annotations

from dihera import load_job, render
from dihera.kube.snapshot import JobSnapshot
from dihera.server import views
from tests.builders import PodBuilder, job, task


def test_each_replica_shows_its_newest_live_pod() -> None:
    pods = [
        PodBuilder("a-1").host("dqn-collector-0").created("2026-01-01T00:00:05Z").phase("Running").obj(),
        PodBuilder("a-0").host("dqn-collector-0").created("2026-01-01T00:00:01Z").phase("Failed").obj(),
        PodBuilder("b-1").host("dqn-collector-1").created("2026-01-01T00:00:08Z").phase("Running").deleting(
            "2026-01-01T00:00:09Z"
        ).obj(),
        PodBuilder("b-0").host("dqn-collector-1").created("2026-01-01T00:00:02Z").phase("Running").obj(),
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
    pending = PodBuilder("p").host("dqn-collector-1").created("2026-01-01T00:00:01Z").phase("Pending").obj()
    cached = JobSnapshot(loaded.to_manifest(), render(loaded).configmap, (pending,))
    rows = views.replica_rows(cached, "cluster.local")
    assert [(r.rank, r.name, r.pod, r.phase) for r in rows] == [
        (0, "learner-0", None, None), (1, "collector-0", None, None), (2, "collector-1", "p", "Pending")
    ]
    assert views.addresses(cached, "cluster.local") == [r.fqdn for r in rows]
    assert rows[2].fqdn == "dqn-collector-1.di-dqn.team-a.svc.cluster.local"
    before_start = JobSnapshot(cached.body, None, ())
    assert views.replica_rows(before_start, "cluster.local") == [] and views.addresses(before_start, "x") == []
