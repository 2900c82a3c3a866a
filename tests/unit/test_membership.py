"""Membership: ranks never change under a live replica; scale-down removes exactly what is asked."""

from __future__ import annotations

from dihera import Membership, Replica, load_job, plan_membership
from dihera.constants import VACANT_RANK_ADDRESS
from dihera.render import RenderSettings, node_lists
from tests.builders import job, task


def dqn(collectors: int = 2):
    return load_job(job(task("learner"), task("collector", replicas=collectors), task("evaluator")))


def ranks(m: Membership) -> list[tuple[int, str, int]]:
    return [(r.rank, r.task, r.index) for r in m.replicas]


def test_first_membership_ranks_tasks_in_spec_order() -> None:
    m = plan_membership(dqn(), None)
    assert m.generation == 1
    assert ranks(m) == [(0, "learner", 0), (1, "collector", 0), (2, "collector", 1), (3, "evaluator", 0)]


def test_scale_up_appends_ranks_and_keeps_everyone() -> None:
    first = plan_membership(dqn(2), None)
    m = plan_membership(dqn(5), first)
    assert m.generation == 2
    assert set(first.replicas) <= set(m.replicas)
    assert [r for r in m.replicas if r not in first.replicas] == [
        Replica(4, "collector", 2),
        Replica(5, "collector", 3),
        Replica(6, "collector", 4),
    ]


def test_scale_down_removes_the_highest_ranked_by_default() -> None:
    m5 = plan_membership(dqn(5), plan_membership(dqn(2), None))
    m3 = plan_membership(dqn(3), m5)
    assert m3.generation == 3
    assert [r.index for r in m3.of_task("collector")] == [0, 1, 2]
    assert set(m3.replicas) <= set(m5.replicas)


def test_scale_down_removes_exactly_the_named_replicas() -> None:
    m5 = plan_membership(dqn(5), plan_membership(dqn(2), None))
    m3 = plan_membership(dqn(3), m5, remove=[("collector", 0), ("collector", 3)])
    assert [r.index for r in m3.of_task("collector")] == [1, 2, 4]
    assert set(m3.replicas) <= set(m5.replicas)


def test_vacant_ranks_are_refilled_first_and_stay_indexable() -> None:
    m5 = plan_membership(dqn(5), plan_membership(dqn(2), None))
    m4 = plan_membership(dqn(4), m5, remove=[("collector", 0)])  # frees rank 1 and index 0
    j4 = dqn(4)
    nodes = node_lists(j4, m4, RenderSettings())["DI_NODES"].split(",")
    # a vacant rank keeps its position, so DI_NODES[DI_RANK] stays right, and holds an address that
    # refuses DI-engine's dial (an empty entry makes ding's listener thread raise and go deaf)
    assert nodes[1] == VACANT_RANK_ADDRESS == "127.0.0.1"
    for r in m4.replicas:
        assert nodes[r.rank].startswith(f"job-{r.task}-{r.index}.")
    m5b = plan_membership(dqn(5), m4)
    new = [r for r in m5b.replicas if r not in m4.replicas]
    assert new == [Replica(1, "collector", 0)]


def test_no_change_keeps_the_generation() -> None:
    first = plan_membership(dqn(), None)
    assert plan_membership(dqn(), first) == first


def test_json_round_trip() -> None:
    m = plan_membership(dqn(5), plan_membership(dqn(2), None))
    assert Membership.from_json(m.to_json()) == m
