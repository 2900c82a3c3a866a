"""The controller's writes after the status (dihera/controller/apply.py): it deletes the pods a scale-down left,
once Argo finished their tombstones, never twice."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any, cast

import pytest

from dihera.controller.apply import Applier
from dihera.controller.decide.outside import plan_outside
from dihera.controller.decide.view import JobView
from dihera.controller.metrics import Metrics
from dihera.controller.observe import membership_of
from dihera.render import RenderSettings, render
from dihera.render.env import MEMBERSHIP_FILE
from dihera.render.objects import membership_configmap, service
from dihera.validation import load_job
from tests.builders import PodBuilder, WorkflowBuilder, job, retry_node, task
from tests.unit.jobviews import MEMBERSHIP, dijob

JOB = load_job({**job(task("collector", replicas=1), name="j"), "metadata": {"name": "j", "namespace": "ns"}})
#: collector-1 retired, and Argo finished its tombstone
WORKFLOW = (
    WorkflowBuilder("j")
    .uid("wf-uid")
    .dag([("collector", 0)])
    .replica("collector", 1, retired=True)
    .node("r", retry_node("j.collector-1", "Succeeded"))
    .obj()
)


def pod(host: str) -> PodBuilder:
    """The pod of job j's replica ``host`` (``collector-0``), Running, owned by its Workflow."""
    return PodBuilder(f"pod-{host}").uid(f"uid-{host}").host(f"j-{host}").owner("wf-uid").phase("Running")


class Objects:
    def __init__(self) -> None:
        self.deleted: list[str] = []
        self.uids: dict[str, str] = {}

    def delete_pods(self, namespace: str, names: Sequence[str], uids: Mapping[str, str] | None = None) -> None:
        self.deleted += names
        self.uids.update(uids or {})


def applier(objects: Objects) -> Applier:
    nothing = cast(Any, None)  # no DIJob, Event or scaler call is made
    return Applier(nothing, cast(Any, objects), nothing, nothing, Metrics(), RenderSettings())


CACHED = [pod("collector-0").obj(), pod("collector-1").obj()]  # the cache still shows the retired replica's pod alive


def run(live: list[dict[str, Any]] | None) -> tuple[list[str], int]:
    objects, lists = Objects(), []

    def live_pods() -> list[dict[str, Any]]:
        lists.append(1)
        return live or []

    reads = None if live is None else live_pods
    applier(objects).delete_retired_pods(JOB, WORKFLOW, CACHED, {}, reads)
    return objects.deleted, len(lists)


def test_a_pod_the_cache_shows_alive_is_deleted_once_the_api_server_confirms_it() -> None:
    assert run([pod("collector-0").obj(), pod("collector-1").obj()]) == (["pod-collector-1"], 1)


def test_a_pod_the_scaler_deleted_already_is_not_deleted_again() -> None:
    assert run([pod("collector-0").obj(), pod("collector-1").deleting().obj()]) == ([], 1)
    assert run([pod("collector-0").obj()]) == ([], 1)


def test_without_a_cache_the_pods_read_are_live_already() -> None:
    assert run(None) == (["pod-collector-1"], 0)


def test_a_pod_labelled_like_the_retired_replica_but_not_the_workflows_survives() -> None:
    """A pod anyone labelled ``diengine/pod: j-collector-1`` (no owner, or another Workflow's) is not the job's:
    only the Workflow's pod is deleted, under its uid (a pod created again under the name meanwhile is kept)."""
    objects = Objects()
    planted = PodBuilder("planted").uid("u-planted").host("j-collector-1").phase("Running").obj()
    other = PodBuilder("other").uid("u-other").host("j-collector-1").owner("another-wf").phase("Running").obj()
    pods = [*CACHED, planted, other]
    applier(objects).delete_retired_pods(JOB, WORKFLOW, pods, {}, lambda: pods)
    assert objects.deleted == ["pod-collector-1"] and objects.uids == {"pod-collector-1": "uid-collector-1"}


def test_nothing_to_delete_asks_nothing_of_the_api_server() -> None:
    objects, asked = Objects(), []

    def live_pods() -> list[dict[str, Any]]:
        asked.append(1)
        return CACHED

    applier(objects).delete_retired_pods(JOB, WORKFLOW, [pod("collector-0").obj()], {}, live_pods)
    assert objects.deleted == [] and asked == []


# -- what was done from outside, undone or repaired (Applier.undo_outside) --------------------------------


class Outside:
    """The API as the repairs use it: the job's Workflow (as the API server serves it), what exists by kind
    and name, and every write and Event."""

    def __init__(self, job: Any, membership: Any) -> None:
        rendered = render(job, RenderSettings(), membership)
        self.workflow = rendered.workflow
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}
        self.writes: list[str] = []
        self.events: list[tuple[str, str]] = []
        self.suspended: list[str] = []

    def create(self, obj: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        key = (obj["kind"], obj["metadata"]["name"])
        if key in self.objects:
            return self.objects[key], False
        self.objects[key] = obj
        self.writes.append(f"create {key[0]}")
        return obj, True

    def get_workflow(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.workflow

    def get_service(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.objects.get(("Service", name))

    def get_configmap(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.objects.get(("ConfigMap", name))

    def put_back(self, kind: str, obj: dict[str, Any], fields: dict[str, Any]) -> dict[str, Any]:
        self.writes.append(f"put back {kind}")
        self.objects[(kind, obj["metadata"]["name"])] = {**obj, **fields}
        return {**obj, **fields}

    def delete_workflow(self, namespace: str, name: str, uid: str | None = None) -> bool:
        self.writes.append(f"delete Workflow {name}")
        return True

    def suspend(self, namespace: str, name: str) -> bool:
        self.suspended.append(name)
        return True

    def post(self, job: Any, type_: str, reason: str, message: str) -> bool:
        self.events.append((reason, message))
        return True


def outside_view(api: Outside, **kw: Any) -> JobView:
    job = dijob()
    body: dict[str, Any] = {"metadata": {"name": "job", "namespace": "ns", "uid": "job-uid", "generation": 1}}
    body["status"] = {"phase": "Running", "workflowName": "job", "membershipGeneration": 1}
    fields = {
        "membership": MEMBERSHIP,
        "workflow": api.workflow,
        "configmap": membership_configmap(job, MEMBERSHIP, RenderSettings()),
        "service": service(job),
        **kw,
    }
    return JobView(body, job, **fields)


def test_a_deleted_configmap_is_rebuilt_from_the_workflows_replicas_and_a_deleted_service_created_again() -> None:
    api = Outside(dijob(), MEMBERSHIP)
    applier = Applier(cast(Any, api), cast(Any, api), cast(Any, api), cast(Any, None), Metrics(), RenderSettings())
    view = outside_view(api, configmap=None, service=None, membership=None)
    plan = plan_outside(view, RenderSettings())
    after = applier.undo_outside(view, plan, {})
    assert api.writes == ["create Service", "create ConfigMap"]
    assert after.membership == MEMBERSHIP  # the ranks the Workflow runs, the generation the job recorded
    assert [r for r, _ in api.events] == ["ServiceRepaired", "MembershipRepaired"]
    assert "created again from the Workflow's 3 replicas, generation 1" in api.events[1][1]
    assert plan_outside(after, RenderSettings()).empty


def test_a_copy_is_deleted_an_argo_suspend_suspends_the_dijob_and_an_edit_is_put_back() -> None:

    api = Outside(dijob(), MEMBERSHIP)
    applier = Applier(cast(Any, api), cast(Any, api), cast(Any, api), cast(Any, None), Metrics(), RenderSettings())
    suspended = copy.deepcopy(api.workflow)
    suspended["spec"]["suspend"] = True
    view = outside_view(api, workflow=suspended, copies=({"metadata": {"name": "job-abcde"}},))
    edited = copy.deepcopy(view.service)
    edited["spec"]["ports"] = []
    api.objects[("Service", edited["metadata"]["name"])] = edited
    view = outside_view(api, workflow=suspended, copies=({"metadata": {"name": "job-abcde"}},), service=edited)
    applier.undo_outside(view, plan_outside(view, RenderSettings()), {})
    assert api.writes == ["delete Workflow job-abcde", "put back Service"]
    assert api.suspended == ["job"]
    assert [r for r, _ in api.events] == ["WorkflowCopyDeleted", "SuspendedInArgo", "ServiceRepaired"]
    assert "kubectl patch dijob job -n ns --type merge" in api.events[1][1]


@pytest.mark.parametrize("text", [None, "{not json", '{"generation": 1}'])
def test_a_configmap_whose_membership_json_was_removed_or_broken_is_put_back_from_the_workflow(
    text: str | None,
) -> None:
    """No membership.json to put the node lists back from (removed, or edited into something unreadable):
    the membership is rebuilt from the Workflow's replicas, as for a deleted ConfigMap, and written back."""
    api = Outside(dijob(), MEMBERSHIP)
    applier = Applier(cast(Any, api), cast(Any, api), cast(Any, api), cast(Any, None), Metrics(), RenderSettings())
    configmap = membership_configmap(dijob(), MEMBERSHIP, RenderSettings())
    wanted = dict(configmap["data"])
    edited = {**configmap, "data": {k: v for k, v in wanted.items() if k != MEMBERSHIP_FILE}}
    if text is not None:
        edited["data"][MEMBERSHIP_FILE] = text
    api.objects[("ConfigMap", edited["metadata"]["name"])] = edited
    view = outside_view(api, configmap=edited, membership=membership_of(edited))
    assert view.membership is None
    after = applier.undo_outside(view, plan_outside(view, RenderSettings()), {})
    assert api.writes == ["put back ConfigMap"]
    assert api.objects[("ConfigMap", edited["metadata"]["name"])]["data"] == wanted
    assert after.membership == MEMBERSHIP
    assert api.events == [
        (
            "MembershipRepaired",
            f"the job's membership ConfigMap {edited['metadata']['name']} was edited (no readable membership.json): "
            "put back from the Workflow's 3 replicas, generation 1",
        )
    ]
    assert plan_outside(after, RenderSettings()).empty
