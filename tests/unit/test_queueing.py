"""dihera.queueing (pure): the settings, the Workload of a DIJob, what Kueue's status means, the job side's writes."""

from __future__ import annotations

from typing import Any

import jsonpatch
import pytest

from dihera.model import Priority
from dihera.queueing import (
    KueueSettings,
    build_workload,
    finish_patch,
    placements,
    queue_name,
    requeue_patch,
    view_workload,
    with_placements,
    workload_name,
)
from dihera.queueing.settings import parse_priority_classes
from dihera.validation import load_job
from tests.builders import job, task

NOW = "2026-01-01T00:01:00Z"


def queued_job(**spec: Any) -> Any:
    learner = task("learner", replicas=1)
    learner["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
    learner["template"]["metadata"] = {"labels": {"team": "rl"}, "annotations": {"a": "b"}}
    body = job(learner, task("collector", replicas=3), name="j", **spec)
    body["metadata"].update(namespace="ns", uid="job-uid", labels={"kueue.x-k8s.io/queue-name": "lq", "x": "y"})
    return load_job(body)


def cond(kind: str, status: str, reason: str = "", message: str = "") -> dict[str, Any]:
    return {"type": kind, "status": status, "reason": reason, "message": message, "lastTransitionTime": "T0"}


def workload(*conditions: dict[str, Any], admission: dict[str, Any] | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {"conditions": list(conditions)}
    if admission is not None:
        status["admission"] = admission
    return {"metadata": {"name": "dijob-j", "resourceVersion": "7", "generation": 1}, "status": status}


ADMISSION = {
    "clusterQueue": "cq",
    "podSetAssignments": [
        {"name": "learner", "flavors": {"cpu": "gpu-nodes"}, "count": 1},
        {"name": "collector", "flavors": {"cpu": "default"}, "count": 3},
    ],
}
ADMITTED = (cond("QuotaReserved", "True", "QuotaReserved"), cond("Admitted", "True", "Admitted"))


# -- settings ----------------------------------------------------------------------------------------------------


def test_priority_and_preemptible_name_the_class() -> None:
    settings = KueueSettings()
    assert settings.priority_class(Priority.LOW, preemptible=True) == "dihera-low"
    assert settings.priority_class(Priority.HIGH, preemptible=True) == "dihera-high"
    # preemptible: false is one class above every other, whatever spec.priority says
    assert settings.priority_class(Priority.LOW, preemptible=False) == "dihera-nonpreemptible"
    assert settings.priority_class(Priority.HIGH, preemptible=False) == "dihera-nonpreemptible"


def test_the_mapping_is_parsed_over_the_defaults_and_errors_name_the_entry() -> None:
    assert parse_priority_classes("high=urgent") == {"low": "dihera-low", "normal": "dihera-normal", "high": "urgent"}
    with pytest.raises(ValueError, match="'urgent' is not a priority; valid: low, normal, high"):
        parse_priority_classes("urgent=x")
    with pytest.raises(ValueError, match="'high' is not PRIORITY=CLASS"):
        parse_priority_classes("high")
    with pytest.raises(ValueError, match="no class for priority low"):
        KueueSettings(priority_classes={"normal": "a", "high": "b"})


# -- the Workload ------------------------------------------------------------------------------------------------


def test_one_pod_set_per_task_with_its_template_owned_by_the_dijob() -> None:
    wl = build_workload(queued_job(), "lq", "dihera-high", 300)
    assert wl["apiVersion"] == "kueue.x-k8s.io/v1beta2" and wl["kind"] == "Workload"
    meta = wl["metadata"]
    assert meta["name"] == workload_name("j") == "dijob-j" and meta["namespace"] == "ns"
    assert meta["labels"] == {"app.kubernetes.io/managed-by": "dihera", "diengine/job": "j"}
    (owner,) = meta["ownerReferences"]
    assert owner["kind"] == "DIJob" and owner["uid"] == "job-uid" and owner["controller"] is True
    spec = wl["spec"]
    assert spec["queueName"] == "lq" and spec["priority"] == 300
    assert spec["priorityClassRef"] == {
        "group": "kueue.x-k8s.io",
        "kind": "WorkloadPriorityClass",
        "name": "dihera-high",
    }
    assert [(p["name"], p["count"]) for p in spec["podSets"]] == [("learner", 1), ("collector", 3)]
    learner = spec["podSets"][0]["template"]
    assert learner["metadata"] == {"labels": {"team": "rl"}, "annotations": {"a": "b"}}  # Kueue allows only these
    assert learner["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "1"}}


def test_a_slice_asks_only_for_the_added_replicas() -> None:
    wl = build_workload(queued_job(), "lq", "c", 1, counts={"learner": 0, "collector": 2}, name="dijob-j-g2")
    assert wl["metadata"]["name"] == "dijob-j-g2"
    assert [(p["name"], p["count"]) for p in wl["spec"]["podSets"]] == [("collector", 2)]


def test_the_queue_comes_from_kueues_label() -> None:
    assert queue_name({"kueue.x-k8s.io/queue-name": "lq"}) == "lq"
    assert queue_name({"other": "x"}) is None and queue_name(None) is None


# -- what the status says ----------------------------------------------------------------------------------------


def test_a_new_workload_is_not_admitted() -> None:
    view = view_workload({"metadata": {"name": "dijob-j"}})
    assert not view.admitted and view.waiting is None and view.evicted is None and not view.requeue_due


def test_waiting_carries_kueues_reason_and_message() -> None:
    msg = "couldn't assign flavors to pod set collector: insufficient unused quota for cpu in flavor default"
    view = view_workload(workload(cond("QuotaReserved", "False", "Pending", msg)))
    assert not view.admitted and view.waiting == f"Pending: {msg}"


def test_admitted_with_its_flavors() -> None:
    view = view_workload(workload(*ADMITTED, admission=ADMISSION))
    assert view.admitted and view.reserved and view.waiting is None
    assert view.flavors == {"learner": {"cpu": "gpu-nodes"}, "collector": {"cpu": "default"}}


def test_evicted_is_not_admitted_and_owes_a_release() -> None:
    evicted = cond("Evicted", "True", "Preempted", "Preempted to accommodate a workload (UID: u) due to prioritization")
    view = view_workload(workload(*ADMITTED, evicted, admission=ADMISSION))
    assert not view.admitted and view.evicted == ("Preempted", evicted["message"]) and view.requeue_due


def test_finished_is_not_admitted() -> None:
    view = view_workload(workload(*ADMITTED, cond("Finished", "True", "Succeeded")))
    assert view.finished and not view.admitted and not view.requeue_due


# -- placement ---------------------------------------------------------------------------------------------------


def test_the_assigned_flavors_node_labels_and_tolerations_go_into_the_pod_templates() -> None:
    gpu = {"spec": {"nodeLabels": {"pool": "gpu"}, "tolerations": [{"key": "gpu", "operator": "Exists"}]}}
    where = placements(view_workload(workload(*ADMITTED, admission=ADMISSION)), {"gpu-nodes": gpu, "default": {}})
    assert set(where) == {"learner"}  # the default flavor adds nothing
    job_ = queued_job()
    placed = with_placements(job_, where)
    spec = placed.task("learner").template["spec"]
    assert spec["nodeSelector"] == {"pool": "gpu"} and spec["tolerations"] == [{"key": "gpu", "operator": "Exists"}]
    assert "nodeSelector" not in placed.task("collector").template["spec"]
    assert placed.labels == {"x": "y"}  # the Workflow and pods are not Kueue's: no queue label on them
    assert "nodeSelector" not in job_.task("learner").template["spec"]  # the job itself is unchanged


def test_a_selector_the_template_has_is_kept_beside_the_flavors() -> None:
    learner = task("learner", replicas=1)
    learner["template"]["spec"]["nodeSelector"] = {"zone": "a"}
    learner["template"]["spec"]["tolerations"] = [{"key": "gpu", "operator": "Exists"}]
    job_ = load_job(job(learner, name="j"))
    gpu = {"spec": {"nodeLabels": {"pool": "gpu"}, "tolerations": [{"key": "gpu", "operator": "Exists"}]}}
    view = view_workload(workload(*ADMITTED, admission={"podSetAssignments": [ADMISSION["podSetAssignments"][0]]}))
    spec = with_placements(job_, placements(view, {"gpu-nodes": gpu})).task("learner").template["spec"]
    assert spec["nodeSelector"] == {"zone": "a", "pool": "gpu"}
    assert spec["tolerations"] == [{"key": "gpu", "operator": "Exists"}]


# -- the job side's status writes --------------------------------------------------------------------------------


def test_releasing_an_evicted_workload_is_what_kueues_job_reconciler_writes() -> None:
    evicted = cond("Evicted", "True", "Preempted", "Preempted to accommodate a higher priority workload")
    wl = workload(*ADMITTED, evicted, admission=ADMISSION)
    ops = requeue_patch(wl, NOW)
    assert ops[0] == {"op": "replace", "path": "/metadata/resourceVersion", "value": "7"}  # the one precondition
    after = jsonpatch.apply_patch(wl, ops)
    assert "admission" not in after["status"]
    conds = {c["type"]: c for c in after["status"]["conditions"]}
    assert conds["QuotaReserved"]["status"] == "False" and conds["QuotaReserved"]["reason"] == "Pending"
    assert (
        conds["QuotaReserved"]["message"] == evicted["message"] and conds["QuotaReserved"]["lastTransitionTime"] == NOW
    )
    assert conds["Admitted"]["status"] == "False" and conds["Requeued"]["status"] == "True"
    assert conds["Evicted"] == evicted  # Kueue resets it when it reserves quota again
    assert requeue_patch(after, NOW) == []  # nothing left to release


def test_an_eviction_that_is_not_a_preemption_is_released_without_requeued_true() -> None:
    wl = workload(*ADMITTED, cond("Evicted", "True", "InactiveWorkload", "deactivated"), admission=ADMISSION)
    conds = {c["type"]: c for c in jsonpatch.apply_patch(wl, requeue_patch(wl, NOW))["status"]["conditions"]}
    assert conds["Requeued"]["status"] == "False"


def test_a_workload_neither_evicted_nor_reserved_has_nothing_to_release() -> None:
    assert requeue_patch(workload(*ADMITTED, admission=ADMISSION), NOW) == []
    assert requeue_patch(workload(cond("QuotaReserved", "False", "Pending", "x")), NOW) == []


@pytest.mark.parametrize(("succeeded", "reason"), [(True, "Succeeded"), (False, "Failed")])
def test_a_finished_job_finishes_its_workload_once(succeeded: bool, reason: str) -> None:
    wl = workload(*ADMITTED, admission=ADMISSION)
    after = jsonpatch.apply_patch(wl, finish_patch(wl, succeeded, "all 4 replicas succeeded", NOW))
    finished = after["status"]["conditions"][-1]
    assert finished["type"] == "Finished" and finished["status"] == "True" and finished["reason"] == reason
    assert finished["message"] == "all 4 replicas succeeded"
    assert finish_patch(after, succeeded, "again", NOW) == []


def test_the_watch_caches_slim_copy_gives_the_same_answers() -> None:
    """The controller reads Workloads from its watch cache (slim copies, dihera.controller.slim)."""
    from dihera.kube.watch.slim import slim_workload
    from dihera.queueing.slices import plan_release, pod_set_counts

    full = build_workload(queued_job(), "lq", "dihera-high", 300)
    evicted = cond("Evicted", "True", "Preempted", "Preempted to accommodate a higher priority workload")
    full["metadata"].update(resourceVersion="7", generation=1, managedFields=[{"manager": "kueue"}])
    full["status"] = {
        "conditions": [*ADMITTED, evicted],
        "admission": ADMISSION,
        "reclaimablePods": [{"name": "collector", "count": 1}],
    }
    slim = slim_workload(full)
    assert "managedFields" not in slim["metadata"] and "template" not in slim["spec"]["podSets"][0]
    assert view_workload(slim) == view_workload(full)
    assert requeue_patch(slim, NOW) == requeue_patch(full, NOW)
    assert pod_set_counts(slim) == pod_set_counts(full) == {"learner": 1, "collector": 2}
    assert plan_release(slim, [], {"learner": 1, "collector": 1}) == plan_release(
        full, [], {"learner": 1, "collector": 1}
    )
