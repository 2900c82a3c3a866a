"""The scaling use case on a job in memory (tests/unit/scaling_cluster.py): the order of its writes, and a lost
resourceVersion race read again and recomputed (docs/scaling.md, "The order of writes, and why it is safe")."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from dihera.errors import QuotaRefused
from dihera.membership import Membership, Replica
from dihera.model import DIJob
from dihera.render.env import MEMBERSHIP_FILE
from dihera.scaling import GENERATION_ANNOTATION, ScaleRequest
from dihera.scaling.executor import ScaleExecutor
from tests.unit.scaled_job import BASE
from tests.unit.scaling_cluster import MemoryCluster, MemoryQuota


def _executor(cluster: MemoryCluster, pauses: list[float], quota: MemoryQuota | None = None) -> ScaleExecutor:
    return ScaleExecutor(
        jobs=cluster,
        memberships=cluster,
        workflows=cluster,
        retirement=cluster,
        quota=quota,
        sleep=pauses.append,
    )


def _collectors(cluster: MemoryCluster) -> tuple[int, str]:
    """The DIJob's collector replicas and its stamp."""
    meta, tasks = cluster.objects["DIJob"]["metadata"], cluster.objects["DIJob"]["spec"]["tasks"]
    return next(t["replicas"] for t in tasks if t.get("name", t["type"]) == "collector"), meta["annotations"][
        GENERATION_ANNOTATION
    ]


def _membership(cluster: MemoryCluster) -> Membership:
    return Membership.from_json(cluster.objects["ConfigMap"]["data"][MEMBERSHIP_FILE])


def test_a_scale_down_asks_quota_commits_converges_deletes_pods_writes_the_spec_then_gives_quota_back() -> None:
    cluster, pauses = MemoryCluster(BASE), list[float]()
    scaler = _executor(cluster, pauses, MemoryQuota(cluster.writes))
    result = scaler.scale("default", "j", ScaleRequest.remove_named(["collector-1"]))
    assert cluster.writes == [
        "admit generation 2",
        "ConfigMap",
        "Workflow",
        "delete pods ['pod-collector-1']",
        "DIJob",
        "release to {'learner': 1, 'collector': 1, 'evaluator': 1}",
    ]
    assert result.changed and result.removed == (Replica(2, "collector", 1),) and result.added == ()
    assert result.deleted_pods == ("pod-collector-1",)
    assert _membership(cluster).generation == 2 and _collectors(cluster) == (1, "2")
    assert cluster.watched_from == cluster.written["Workflow"]  # from the version our patch wrote
    assert pauses == []


def test_a_scale_up_lists_no_pods_and_gives_no_quota_back() -> None:
    cluster, pauses = MemoryCluster(BASE), list[float]()
    result = _executor(cluster, pauses, MemoryQuota(cluster.writes)).scale(
        "default", "j", ScaleRequest.add("collector", 1)
    )
    assert cluster.writes == ["admit generation 2", "ConfigMap", "Workflow", "DIJob"]
    assert result.added == (Replica(4, "collector", 2),) and result.deleted_pods == ()
    assert cluster.watched_from == [] and _collectors(cluster) == (3, "2")


def test_a_quota_refusal_writes_nothing() -> None:
    class Refusing(MemoryQuota):
        def admit(self, job: DIJob, before: Mapping[str, int], after: Mapping[str, int], generation: int) -> None:
            raise QuotaRefused("no quota")

    cluster = MemoryCluster(BASE)
    with pytest.raises(QuotaRefused):
        _executor(cluster, [], Refusing(cluster.writes)).scale("default", "j", ScaleRequest.add("collector", 1))
    assert cluster.writes == [] and _membership(cluster).generation == 1


def test_a_commit_that_lost_the_race_is_planned_again_on_the_newer_membership() -> None:
    """Another scaler (another process: its own locks) commits between our read and our write: our ConfigMap
    write is refused (409), read again and re-planned on top of its commit, never over it."""
    cluster, pauses = MemoryCluster(BASE), list[float]()
    other = _executor(cluster, [])
    cluster.before_write["ConfigMap"] = lambda: other.scale("default", "j", ScaleRequest.add("collector", 1))
    result = _executor(cluster, pauses).scale("default", "j", ScaleRequest.add("collector", 1))
    assert cluster.writes == ["ConfigMap", "Workflow", "DIJob", "ConfigMap", "Workflow", "DIJob"]
    assert len(pauses) == 1  # one lost race, one pause
    assert result.membership.generation == 3 and result.added == (Replica(5, "collector", 3),)
    assert result.membership == _membership(cluster) and _collectors(cluster) == (4, "3")


def test_a_status_write_racing_the_spec_write_is_retried_from_a_fresh_read() -> None:
    cluster, pauses = MemoryCluster(BASE), list[float]()
    cluster.before_write["DIJob"] = lambda: cluster.touch("DIJob")  # the controller's status write
    _executor(cluster, pauses).scale("default", "j", ScaleRequest.set_replicas("collector", 3))
    assert cluster.writes == ["ConfigMap", "Workflow", "DIJob"] and len(pauses) == 1
    assert _collectors(cluster) == (3, "2")
