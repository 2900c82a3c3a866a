"""The controller never adopts, overwrites or deletes an object its DIJob does not own
(dihera/controller/decide/ownership.py, and its uses in observe.py, apply.py, reconcile.py, status.py): an object
under one of the job's names owned by anyone else is a conflict, the job Pending (reason ObjectConflict) with
one Warning Event, looked at again on a backoff; and every status write tests the DIJob's uid."""

from __future__ import annotations

import copy
from typing import Any, cast

import jsonpatch  # type: ignore[import-untyped]
import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from dihera.constants import EVENT_WARNING, EventReason, Phase
from dihera.controller.apply import Applier
from dihera.controller.decide.hold import SuspendPlan
from dihera.controller.decide.outside import plan_outside
from dihera.controller.decide.ownership import (
    CONFLICT_RETRY_MAX,
    CONFLICT_RETRY_MIN,
    Conflict,
    conflict,
    retry_after,
)
from dihera.controller.decide.status import compute_status, status_patch
from dihera.controller.decide.view import JobView
from dihera.controller.metrics import Metrics
from dihera.controller.observe import LiveReads, Observer
from dihera.controller.validated import ValidatedJobs
from dihera.kube.jobs import JobStore, StatusConflict
from dihera.render import RenderSettings, render
from dihera.render.objects import service
from tests.unit.jobviews import MEMBERSHIP, T1, dijob

JOB_UID = "job-uid"
OURS = {"apiVersion": "diengine.opendilab.org/v2alpha1", "kind": "DIJob", "name": "job", "uid": JOB_UID}
LABELS = {"app.kubernetes.io/managed-by": "dihera", "diengine/job": "job"}


def found(owners: list[dict[str, Any]] | None = None, labels: dict[str, str] | None = None) -> dict[str, Any]:
    """A Service ``di-job`` as the API server serves it, with ``owners`` and ``labels``."""
    meta: dict[str, Any] = {"name": "di-job", "namespace": "ns", "uid": "svc-uid", "resourceVersion": "7"}
    if owners is not None:
        meta["ownerReferences"] = owners
    if labels is not None:
        meta["labels"] = labels
    return {"kind": "Service", "metadata": meta, "spec": {"selector": {"app": "web"}}}


@pytest.mark.parametrize(
    ("case", "obj", "expected"),
    [
        ("owned by the DIJob (controller)", found([{**OURS, "controller": True}]), None),
        (
            "our uid but not as controller",
            found([{**OURS, "controller": False}]),
            Conflict("Service", "di-job", f"owned by DIJob job (uid {JOB_UID})"),
        ),
        ("no owner", found(), Conflict("Service", "di-job", "no owner")),
        (
            "another owner",
            found([{"kind": "Deployment", "name": "web", "uid": "d1", "controller": True}]),
            Conflict("Service", "di-job", "owned by Deployment web (uid d1)"),
        ),
        (
            "a deleted same-named DIJob's, labelled: a leftover",
            found([{**OURS, "uid": "old-uid", "controller": True}], LABELS),
            Conflict("Service", "di-job", "owned by DIJob job (uid old-uid)", leftover=True),
        ),
        (
            "the job's labels but no owner: not a leftover (anyone can set labels)",
            found(labels=LABELS),
            Conflict("Service", "di-job", "no owner"),
        ),
    ],
)
def test_whose_object_a_name_holds(case: str, obj: dict[str, Any], expected: Conflict | None) -> None:
    assert conflict("Service", obj, "job", JOB_UID) == expected, case


def test_a_conflict_says_whose_object_it_is_and_what_to_do() -> None:
    foreign = Conflict("Service", "di-job", "no owner")
    assert foreign.message == (
        "a Service di-job that this DIJob does not own exists (no owner): it is left untouched; "
        "delete or rename it (or the DIJob) and the job goes on"
    )
    leftover = Conflict("Workflow", "job", "owned by DIJob job (uid old)", leftover=True)
    assert "leftover of a deleted DIJob of the same name (owned by DIJob job (uid old))" in leftover.message
    assert "waits for it to go and tries again" in leftover.message


def test_a_permanent_conflict_is_looked_at_again_on_a_growing_wait() -> None:
    assert retry_after(None, T1) == CONFLICT_RETRY_MIN
    assert retry_after("2026-01-01T00:00:58Z", T1) == CONFLICT_RETRY_MIN
    assert retry_after("2026-01-01T00:00:00Z", T1) == 60
    assert retry_after("2025-12-31T00:00:00Z", T1) == CONFLICT_RETRY_MAX


# -- the pass: create, observe, repair ---------------------------------------------------------------------


class Api:
    """What exists by kind and name (as the API server would answer), every write and Event."""

    def __init__(self, *existing: dict[str, Any]) -> None:
        self.objects = {(o["kind"], o["metadata"]["name"]): o for o in existing}
        self.writes: list[str] = []
        self.events: list[tuple[str, str, str]] = []

    def create(self, obj: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        key = (obj["kind"], obj["metadata"]["name"])
        if key in self.objects:
            return copy.deepcopy(self.objects[key]), False
        self.objects[key] = obj
        self.writes.append(f"create {key[0]}")
        return obj, True

    def get_service(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.objects.get(("Service", name))

    def get_configmap(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.objects.get(("ConfigMap", name))

    def get_workflow(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.objects.get(("Workflow", name))

    def list_workflows(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        return [o for (kind, _), o in self.objects.items() if kind == "Workflow"]

    def list_pods(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        return []

    def put_back(self, kind: str, obj: dict[str, Any], fields: dict[str, Any]) -> dict[str, Any]:
        self.writes.append(f"put back {kind}")
        return {**obj, **fields}

    def post(self, job: Any, type_: str, reason: str, message: str) -> None:
        self.events.append((type_, reason, message))


def applier(api: Api) -> Applier:
    return Applier(cast(Any, api), cast(Any, api), cast(Any, api), cast(Any, None), Metrics(), RenderSettings())


FOREIGN_SERVICE = found([{"kind": "Deployment", "name": "web", "uid": "d1", "controller": True}])


def test_a_foreign_service_is_left_untouched_and_no_workflow_is_created() -> None:
    api = Api(copy.deepcopy(FOREIGN_SERVICE))
    made = applier(api).create(dijob(), None, {})
    assert api.writes == ["create ConfigMap"]  # the ConfigMap is the job's; no Service write, no Workflow
    assert made.conflicts == (Conflict("Service", "di-job", "owned by Deployment web (uid d1)"),)
    assert set(made.objects) == {"ConfigMap"}
    assert api.objects[("Service", "di-job")] == FOREIGN_SERVICE


def test_the_jobs_own_objects_already_there_are_read_back_not_conflicts() -> None:
    rendered = render(dijob(), RenderSettings(), MEMBERSHIP)
    api = Api(rendered.configmap, rendered.service, rendered.workflow)
    made = applier(api).create(dijob(), None, {})
    assert made.conflicts == () and api.writes == [] and set(made.objects) == {"ConfigMap", "Service", "Workflow"}


def test_a_foreign_workflow_under_the_jobs_name_is_a_conflict_too() -> None:
    foreign = {"kind": "Workflow", "metadata": {"name": "job", "namespace": "ns", "uid": "w1"}}
    api = Api(foreign)
    made = applier(api).create(dijob(), None, {})
    assert api.writes == ["create ConfigMap", "create Service"]
    assert made.conflicts == (Conflict("Workflow", "job", "no owner"),)


def body(status: dict[str, Any] | None = None) -> dict[str, Any]:
    out = dijob().to_manifest()
    out["metadata"].update(uid=JOB_UID, generation=1, resourceVersion="3")
    if status is not None:
        out["status"] = status
    return out


def test_the_observer_never_reads_a_foreign_configmap_as_the_membership_nor_a_foreign_service_as_the_jobs() -> None:
    configmap = {
        "kind": "ConfigMap",
        "metadata": {"name": "di-job", "namespace": "ns", "labels": LABELS},
        "data": {"membership.json": MEMBERSHIP.to_json()},  # planted: would become the job's ranks
    }
    api = Api(copy.deepcopy(FOREIGN_SERVICE), configmap)
    observer = Observer(LiveReads(cast(Any, api), cast(Any, api)), ValidatedJobs())
    reads = observer.live
    view = observer.view(body(), reads, {})
    assert view.service is None and view.configmap is None and view.membership is None
    assert [c.kind for c in view.conflicts] == ["ConfigMap", "Service"]


PENDING = {
    "phase": "Pending",
    "conditions": [
        {
            "type": "Pending",
            "status": "True",
            "reason": "JobPending",
            "message": "creating the job's Workflow",
            "lastTransitionTime": "2026-01-01T00:00:40Z",
            "lastUpdateTime": "2026-01-01T00:00:40Z",
        }
    ],
}


def conflicted(status: dict[str, Any]) -> JobView:
    clash = Conflict("Service", "di-job", "no owner")
    return JobView(body(status), dijob(), cached=False, conflicts=(clash,))


def test_a_conflict_keeps_the_job_pending_with_its_reason_one_warning_and_a_backoff() -> None:
    update = compute_status(conflicted(PENDING), SuspendPlan(), T1)
    (cond,) = [c for c in update.status["conditions"] if c["status"] == "True"]
    assert update.phase == Phase.PENDING and cond["reason"] == EventReason.OBJECT_CONFLICT
    assert cond["message"].startswith("a Service di-job that this DIJob does not own exists (no owner)")
    assert [(e.type, e.reason) for e in update.events] == [(EVENT_WARNING, EventReason.OBJECT_CONFLICT)]
    assert update.wakeup == 20  # Pending for 20 s: looked at again in 20 s
    # the next pass, the status written: the same conflict is no new Event, the wait grows
    again = compute_status(conflicted(update.status), SuspendPlan(), "2026-01-01T00:02:00Z")
    assert again.events == () and not again.changed and again.wakeup == 80


def running_view(**fields: Any) -> JobView:
    """The job running, its Workflow and membership ConfigMap its own, then ``fields``."""
    status = {"phase": "Running", "workflowName": "job", "membershipGeneration": 1}
    rendered = render(dijob(), RenderSettings(), MEMBERSHIP)
    fields = {"membership": MEMBERSHIP, "workflow": rendered.workflow, "configmap": rendered.configmap, **fields}
    return JobView(body(status), dijob(), **fields)


def test_a_deleted_service_found_replaced_by_a_foreign_one_is_not_written() -> None:
    api = Api(copy.deepcopy(FOREIGN_SERVICE))
    view = running_view()
    plan = plan_outside(view, RenderSettings())
    assert plan.service == "deleted"  # the watch cache sees no Service (the foreign one is unlabelled)
    after = applier(api).undo_outside(view, plan, {})
    assert api.writes == [] and api.events == []
    assert [c.kind for c in after.conflicts] == ["Service"] and plan_outside(after, RenderSettings()).service is None


def test_an_edited_service_is_put_back_only_when_it_is_the_jobs() -> None:
    ours = service(dijob())
    edited = copy.deepcopy(ours)
    edited["spec"]["selector"] = {"app": "web"}
    view = running_view(service=edited)
    api = Api(edited)
    applier(api).undo_outside(view, plan_outside(view, RenderSettings()), {})
    assert api.writes == ["put back Service"]
    stranger = copy.deepcopy(edited)
    del stranger["metadata"]["ownerReferences"]
    api = Api(stranger)
    after = applier(api).undo_outside(view, plan_outside(view, RenderSettings()), {})
    assert api.writes == [] and [c.owner for c in after.conflicts] == ["no owner"]


# -- the status write: only onto the object read ----------------------------------------------------------


def test_every_status_write_tests_the_uid_of_the_dijob_read() -> None:
    read = body({"phase": "Starting"})
    ops = status_patch(read, {"phase": "Running"})
    assert ops[0] == {"op": "test", "path": "/metadata/uid", "value": JOB_UID}
    assert jsonpatch.apply_patch(read, ops)["status"] == {"phase": "Running"}
    again = copy.deepcopy(read)
    again["metadata"]["uid"] = "a-new-dijob-of-the-same-name"
    with pytest.raises(jsonpatch.JsonPatchTestFailed):
        jsonpatch.apply_patch(again, ops)
    first = status_patch(body(None), {"phase": "Pending"})
    assert [op["op"] for op in first[:3]] == ["test", "replace", "add"]  # uid, resourceVersion, then the status


def test_the_jobs_own_service_stripped_of_its_labels_gets_them_back() -> None:
    """The watch selects Services by the job's labels: the job's own Service with its labels removed looks
    deleted; the create answered "already exists" finds it the job's (its ownerReference), so it is put back."""
    stripped = service(dijob())
    del stripped["metadata"]["labels"]
    api = Api(stripped)
    after = applier(api).undo_outside(running_view(), plan_outside(running_view(), RenderSettings()), {})
    assert api.writes == ["put back Service"] and after.conflicts == ()
    assert after.service is not None and after.service["metadata"]["labels"] == LABELS
    assert [r for _, r, _ in api.events] == ["ServiceRepaired"]


def test_only_a_copy_the_dijob_owns_is_deleted() -> None:
    """An Argo RESUBMIT's copy keeps the ownerReferences (Argo's FormulateResubmitWorkflow): it is the job's and
    is deleted (under its uid). A Workflow anyone labelled ``diengine/job: job`` is not the job's: left alone."""
    copy_ = {"kind": "Workflow", "metadata": {"name": "job-abcde", "uid": "c1", "ownerReferences": [OURS]}}
    stranger = {"kind": "Workflow", "metadata": {"name": "job-zzzzz", "uid": "c2", "labels": LABELS}}
    api = Api(copy_, stranger)
    observer = Observer(LiveReads(cast(Any, api), cast(Any, api)), ValidatedJobs())
    view = observer.view(body(), observer.live, {})
    assert [w["metadata"]["name"] for w in view.copies] == ["job-abcde"]


class _Refusing:
    """CustomObjectsApi answering every status patch as the API server answers a failed JSON patch ``test``
    (a bare 422), and a read with the DIJob of the name now (``uid``; None: gone)."""

    def __init__(self, uid: str | None) -> None:
        self.uid = uid

    def patch_namespaced_custom_object_status(self, *args: Any, **kwargs: Any) -> None:
        raise ApiException(status=422, reason="Unprocessable Entity")

    def get_namespaced_custom_object(self, *args: Any) -> dict[str, Any]:
        if self.uid is None:
            raise ApiException(status=404)
        return {"metadata": {"uid": self.uid}}


@pytest.mark.parametrize(("now", "conflict_"), [("a-new-uid", True), (None, True), (JOB_UID, False)])
def test_a_refused_uid_test_is_a_conflict_only_when_the_dijob_is_another_object_now(
    now: str | None, conflict_: bool
) -> None:
    jobs = JobStore(client.ApiClient())
    jobs._custom = cast(Any, _Refusing(now))
    ops = status_patch(body({"phase": "Starting"}), {"phase": "Running"})
    with pytest.raises(StatusConflict if conflict_ else ApiException):
        jobs.patch_status("ns", "job", ops)
