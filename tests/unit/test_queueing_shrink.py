"""Shrink before eviction, the pure decision: how many collectors running jobs give back so a waiting Workload
fits, never a learner or an evaluator, minimums respected, nothing when it cannot be enough, and the grow back."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest

from dihera.queueing.shrink import (
    Grow,
    Shrink,
    Spare,
    Victim,
    cluster_queue_free,
    describe_amounts,
    grown_annotation,
    parse_quantity,
    plan_grow,
    plan_shrink,
    pod_requests,
    shrunk_annotation,
    shrunk_from,
    shrunk_note,
    victim_of,
    workload_requests,
)
from dihera.validation import load_job
from tests.builders import job, task

D = Decimal


def cpu(n: str) -> dict[str, Decimal]:
    return {"cpu": parse_quantity(n)}


def collectors(replicas: int, minimum: int = 1, per: str = "1") -> Spare:
    return Spare("collector", replicas, minimum, cpu(per))


def victim(name: str, priority: int, *spares: Spare, total: int | None = None, floor: int = 0) -> Victim:
    total = total if total is not None else 1 + sum(s.replicas for s in spares)  # + its learner
    return Victim("ns", name, priority, spares, total, floor)


@pytest.mark.parametrize(
    ("text", "value"),
    [("500m", "0.5"), ("2", "2"), ("1Gi", str(2**30)), ("1e3", "1000"), ("1.5k", "1500"), (3, "3")],
)
def test_quantities(text: object, value: str) -> None:
    assert parse_quantity(text) == D(value)


def test_a_bad_quantity_names_the_value() -> None:
    with pytest.raises(ValueError, match="'1 cpu'"):
        parse_quantity("1 cpu")


def test_a_pod_counts_its_containers_its_largest_init_container_and_its_overhead() -> None:
    spec = {
        "containers": [{"resources": {"requests": {"cpu": "500m"}}}, {"resources": {"requests": {"cpu": "250m"}}}],
        "initContainers": [{"resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}],
        "overhead": {"cpu": "100m"},
    }
    assert pod_requests({"spec": spec}) == {"cpu": D("1.1"), "memory": D(2**30)}


def test_a_workload_asks_for_its_pod_sets_less_the_reclaimable_pods() -> None:
    one_cpu = {"spec": {"containers": [{"resources": {"requests": {"cpu": "1"}}}]}}
    wl = {
        "spec": {
            "podSets": [
                {"name": "learner", "count": 1, "template": one_cpu},
                {"name": "collector", "count": 7, "template": one_cpu},
            ]
        },
        "status": {"reclaimablePods": [{"name": "collector", "count": 6}]},
    }
    assert workload_requests(wl) == {"cpu": D(2)}


def test_the_free_quota_is_the_nominal_quota_less_the_reservations_over_every_flavor() -> None:
    cq = {
        "spec": {
            "resourceGroups": [
                {
                    "flavors": [
                        {"name": "a", "resources": [{"name": "cpu", "nominalQuota": "6"}]},
                        {"name": "b", "resources": [{"name": "cpu", "nominalQuota": "2"}]},
                    ]
                }
            ]
        },
        "status": {"flavorsReservation": [{"name": "a", "resources": [{"name": "cpu", "total": "5500m"}]}]},
    }
    assert cluster_queue_free(cq) == {"cpu": D("2.5")}


def test_it_fits_already_nothing_is_shrunk() -> None:
    assert plan_shrink(cpu("2"), cpu("2"), 300, [victim("low", 100, collectors(7))]) == ()


def test_only_as_many_collectors_as_the_waiting_workload_lacks() -> None:
    plan = plan_shrink(cpu("4"), cpu("1"), 300, [victim("low", 100, collectors(7))])
    assert plan == (Shrink("ns", "low", "collector", 7, 4),)
    assert plan[0].given_back == 3


def test_fractional_requests_round_up_to_whole_collectors() -> None:
    plan = plan_shrink(cpu("1"), cpu("0"), 300, [victim("low", 100, collectors(7, per="300m"))])
    assert plan == (Shrink("ns", "low", "collector", 7, 3),)  # 4 x 300m >= 1


def test_never_below_the_task_minimum_and_never_the_learner_or_evaluator() -> None:
    # the learner and the evaluator are not spares at all; the collectors keep their minimum of 2
    body = job(
        task("learner", replicas=1, containers=[{"name": "l", "image": "i", "resources": {"requests": {"cpu": "4"}}}]),
        task(
            "collector", replicas=4, containers=[{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}}}]
        ),
        task(
            "evaluator", replicas=1, containers=[{"name": "e", "image": "i", "resources": {"requests": {"cpu": "2"}}}]
        ),
        name="low",
    )
    low = victim_of(load_job({**body, "metadata": {**body["metadata"], "namespace": "ns"}}), 100)
    assert [s.task for s in low.spares] == ["collector"]
    assert low.spares[0].minimum == 1 and low.spares[0].per_replica == cpu("1")
    assert plan_shrink(cpu("3"), cpu("0"), 300, [low]) == (Shrink("ns", "low", "collector", 4, 1),)
    # 4 cpu would need the learner (or the evaluator): no shrink at all
    assert plan_shrink(cpu("4"), cpu("0"), 300, [low]) is None
    assert plan_shrink(cpu("2"), cpu("0"), 300, [victim("low", 100, collectors(3, minimum=2))]) is None


def test_the_jobs_min_replicas_bounds_every_collector_task_together() -> None:
    two = victim("low", 100, Spare("a", 3, 1, cpu("1")), Spare("b", 3, 1, cpu("1")), floor=5)  # 7 replicas
    assert plan_shrink(cpu("2"), cpu("0"), 300, [two]) == (Shrink("ns", "low", "a", 3, 1),)
    assert plan_shrink(cpu("3"), cpu("0"), 300, [two]) is None


def test_not_enough_means_no_shrink_at_all() -> None:
    assert plan_shrink(cpu("8"), cpu("1"), 300, [victim("low", 100, collectors(7))]) is None


def test_only_lower_priority_jobs_give_back_lowest_first() -> None:
    jobs = [victim("same", 300, collectors(7)), victim("mid", 200, collectors(3)), victim("low", 100, collectors(3))]
    plan = plan_shrink(cpu("3"), cpu("0"), 300, jobs)
    assert plan == (Shrink("ns", "low", "collector", 3, 1), Shrink("ns", "mid", "collector", 3, 2))
    assert plan_shrink(cpu("5"), cpu("0"), 300, jobs) is None  # "same" is never a victim of equal priority


def test_collectors_that_free_nothing_missing_are_kept() -> None:
    gpu_missing = {"nvidia.com/gpu": D(1)}
    assert plan_shrink(gpu_missing, {}, 300, [victim("low", 100, collectors(7))]) is None


def test_grow_back_as_far_as_the_free_quota_holds() -> None:
    per = {"collector": cpu("1")}
    assert plan_grow({"collector": 7}, {"collector": 1}, per, cpu("6"), False) == (Grow("collector", 1, 7),)
    assert plan_grow({"collector": 7}, {"collector": 1}, per, cpu("2.5"), False) == (Grow("collector", 1, 3),)
    assert plan_grow({"collector": 7}, {"collector": 1}, per, cpu("0.5"), False) == ()
    assert plan_grow({"collector": 7}, {"collector": 7}, per, cpu("6"), False) == ()


def test_no_grow_back_while_a_higher_priority_workload_waits() -> None:
    assert plan_grow({"collector": 7}, {"collector": 1}, {"collector": cpu("1")}, cpu("6"), True) == ()


def test_the_annotation_keeps_the_count_of_the_first_shrink_and_goes_once_grown_back() -> None:
    first = shrunk_annotation({}, [Shrink("ns", "j", "collector", 7, 4)])
    assert json.loads(first) == {"collector": 7}
    again = shrunk_annotation({"diengine/shrunk-from": first}, [Shrink("ns", "j", "collector", 4, 1)])
    assert shrunk_from({"diengine/shrunk-from": again}) == {"collector": 7}
    assert json.loads(grown_annotation({"diengine/shrunk-from": again}, {"collector": 3}) or "") == {"collector": 7}
    assert grown_annotation({"diengine/shrunk-from": again}, {"collector": 7}) is None


@pytest.mark.parametrize("raw", ["not json", "[1]", '{"collector": -1}', '{"collector": true}'])
def test_an_unreadable_annotation_is_no_shrink(raw: str) -> None:
    assert shrunk_from({"diengine/shrunk-from": raw}) == {}


def test_amounts_in_events() -> None:
    amounts: dict[str, Any] = {"memory": D(2**30), "cpu": D("1.500")}
    assert describe_amounts(amounts) == "cpu 1.5, memory 1073741824"
    assert describe_amounts({}) == "nothing"


def test_the_running_condition_of_a_shrunk_job_says_so_with_its_numbers() -> None:
    shrunk = {"diengine/shrunk-from": '{"collector":7}'}
    assert shrunk_note(shrunk, {"learner": 1, "collector": 3}) == (
        "collector 3 of 7: 4 replica(s) given back to a higher-priority Workload of its ClusterQueue; "
        "they come back when the quota is free"
    )
    assert shrunk_note(shrunk, {"collector": 7}) is None
    assert shrunk_note({}, {"collector": 3}) is None
