"""Scaling a queued job under its quota: the slices' plan (pure) and the QuotaGate with an in-memory Workload API."""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import pytest

from dihera.errors import QuotaRefused
from dihera.kube.workloads import QuotaGate
from dihera.queueing import KueueSettings
from dihera.queueing.slices import added_replicas, plan_release, pod_set_counts, resize_ops
from dihera.validation import load_job
from tests.builders import job, task


def wl(name: str, counts: dict[str, int], reclaimable: dict[str, int] | None = None, gen: int | None = None) -> Any:
    meta: dict[str, Any] = {"name": name, "resourceVersion": "3"}
    if gen is not None:
        meta["annotations"] = {"diengine/workload-slice": str(gen)}
    status = {"reclaimablePods": [{"name": k, "count": v} for k, v in (reclaimable or {}).items()]}
    return {
        "metadata": meta,
        "spec": {"podSets": [{"name": k, "count": v} for k, v in counts.items()]},
        "status": status,
    }


def test_a_scale_up_asks_only_for_what_it_adds() -> None:
    assert added_replicas({"learner": 1, "collector": 3}, {"learner": 1, "collector": 5}) == {"collector": 2}
    assert added_replicas({"learner": 1, "collector": 3}, {"learner": 1, "collector": 2}) == {}


def test_reclaimable_pods_are_not_counted() -> None:
    assert pod_set_counts(wl("b", {"collector": 4}, {"collector": 1})) == {"collector": 3}


def test_a_scale_down_deletes_the_newest_slices_it_no_longer_needs_then_reclaims_from_the_base() -> None:
    base = wl("dijob-j", {"learner": 1, "collector": 3})
    slices = [wl("dijob-j-g2", {"collector": 2}, gen=2), wl("dijob-j-g3", {"collector": 1}, gen=3)]
    # 6 collectors admitted, 4 needed: the g3 slice (1) goes; without g2 (2) 3 < 4 would be left, so it stays
    # and the one collector still in excess is reclaimable on the base
    plan = plan_release(base, slices, {"learner": 1, "collector": 4})
    assert plan.delete == ("dijob-j-g3",) and plan.reclaimable == {"collector": 1}
    # down to 2: both slices go, the base gives one collector back
    plan = plan_release(base, slices, {"learner": 1, "collector": 2})
    assert plan.delete == ("dijob-j-g3", "dijob-j-g2") and plan.reclaimable == {"collector": 1}
    # nothing in excess
    assert plan_release(base, [], {"learner": 1, "collector": 3}).reclaimable is None


def test_reclaimable_never_decreases() -> None:
    base = wl("dijob-j", {"collector": 4}, {"collector": 2})
    assert plan_release(base, [], {"collector": 1}).reclaimable == {"collector": 3}


def test_a_requeued_workload_is_resized_to_the_membership() -> None:
    base = wl("dijob-j", {"learner": 1, "collector": 3})
    after = jsonpatch.apply_patch(base, resize_ops(base, {"learner": 1, "collector": 5}))
    assert pod_set_counts(after) == {"learner": 1, "collector": 5}
    assert resize_ops(after, {"learner": 1, "collector": 5}) == []


class Store:
    """The Workload API in memory; ``answer`` is the status Kueue gives a new slice."""

    def __init__(self, answer: dict[str, Any]) -> None:
        self.answer = answer
        self.objects: dict[str, dict[str, Any]] = {}
        self.calls: list[str] = []

    def priority_value(self, name: str) -> int:
        return 100

    def create(self, workload: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        name = workload["metadata"]["name"]
        self.calls.append(f"create {name}")
        self.objects[name] = {**copy.deepcopy(workload), "status": {}}
        return copy.deepcopy(self.objects[name]), True

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        found = self.objects.get(name)
        if found is not None and name != "dijob-j":
            found["status"] = self.answer
        return copy.deepcopy(found)

    def delete(self, namespace: str, name: str) -> bool:
        self.calls.append(f"delete {name}")
        return self.objects.pop(name, None) is not None

    def list(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        return [copy.deepcopy(o) for o in self.objects.values()]

    def patch_status(self, namespace: str, name: str, ops: Any) -> dict[str, Any]:
        self.calls.append(f"patch {name}/status")
        self.objects[name] = jsonpatch.apply_patch(self.objects[name], ops)
        return self.objects[name]


def queued(labels: dict[str, str] | None = None) -> Any:
    body = job(task("learner", replicas=1), task("collector", replicas=3), name="j")
    body["metadata"].update(
        namespace="ns", uid="u", labels={"kueue.x-k8s.io/queue-name": "lq"} if labels is None else labels
    )
    return load_job(body)


def gate(store: Store) -> QuotaGate:
    clock = iter(range(100))
    return QuotaGate(store, KueueSettings(scale_wait=3), sleep=lambda _: None, clock=lambda: float(next(clock)))  # type: ignore[arg-type]


ADMITTED = {"conditions": [{"type": "QuotaReserved", "status": "True"}, {"type": "Admitted", "status": "True"}]}
WAITING = {
    "conditions": [
        {
            "type": "QuotaReserved",
            "status": "False",
            "reason": "Pending",
            "message": "insufficient unused quota for cpu in flavor default, 2 more needed",
        }
    ]
}


def test_an_admitted_slice_lets_the_scale_up_through_and_holds_its_quota() -> None:
    store = Store(ADMITTED)
    gate(store).admit(queued(), {"learner": 1, "collector": 3}, {"learner": 1, "collector": 5}, 2)
    slice_ = store.objects["dijob-j-g2"]
    assert [(p["name"], p["count"]) for p in slice_["spec"]["podSets"]] == [("collector", 2)]
    assert slice_["metadata"]["annotations"] == {"diengine/workload-slice": "2"}
    assert store.calls == ["create dijob-j-g2"]


def test_a_slice_kueue_does_not_admit_in_time_is_deleted_and_the_scale_up_refused_with_its_reason() -> None:
    store = Store(WAITING)
    with pytest.raises(QuotaRefused) as refused:
        gate(store).admit(queued(), {"learner": 1, "collector": 3}, {"learner": 1, "collector": 5}, 2)
    message = str(refused.value)
    assert "scale-up of DIJob ns/j to learner 1, collector 5 refused" in message
    assert "the added collector 2 in LocalQueue lq within 3s" in message
    assert message.endswith("Pending: insufficient unused quota for cpu in flavor default, 2 more needed")
    assert refused.value.reason == "conflict" and not refused.value.retryable
    assert store.calls == ["create dijob-j-g2", "delete dijob-j-g2"] and store.objects == {}


def test_unqueued_jobs_and_scale_downs_ask_kueue_nothing() -> None:
    store = Store(WAITING)
    gate(store).admit(queued(labels={}), {"collector": 3}, {"collector": 9}, 2)
    gate(store).admit(queued(), {"collector": 3}, {"collector": 2}, 2)
    assert store.calls == []


def test_a_scale_down_deletes_the_slices_it_no_longer_needs() -> None:
    store = Store(ADMITTED)
    store.objects["dijob-j"] = wl("dijob-j", {"learner": 1, "collector": 3})
    store.objects["dijob-j-g2"] = wl("dijob-j-g2", {"collector": 2}, gen=2)
    store.objects["dijob-j-g2"]["metadata"]["labels"] = {"diengine/job": "j"}
    gate(store).release(queued(), {"learner": 1, "collector": 2})
    assert store.calls == ["delete dijob-j-g2", "patch dijob-j/status"]
    assert store.objects["dijob-j"]["status"]["reclaimablePods"] == [{"name": "collector", "count": 1}]
