"""The scaling planner: membership changes, bounds, the Workflow patch (retired pods: test_scaling_retired_pods)."""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch  # type: ignore[import-untyped]
import pytest

from dihera import load_job
from dihera.membership import Membership, Replica
from dihera.render import RenderSettings
from dihera.render.env import node_lists
from dihera.scaling import (
    GENERATION_ANNOTATION,
    RETIRED_TEMPLATE,
    ScaleError,
    ScaleRequest,
    job_spec_patch,
    plan_scale,
    read_dag,
    spec_generation,
    spec_is_current,
    stamp_patch,
    workflow_patch,
)
from tests.builders import task
from tests.unit.scaled_job import BASE, base_job, base_state, patched_workflow


def _names(membership: Membership) -> list[tuple[int, str]]:
    return [(r.rank, f"{r.task}-{r.index}") for r in membership.replicas]


CASES = [
    pytest.param(
        ScaleRequest.set_replicas("collector", 5),
        [
            (0, "learner-0"),
            (1, "collector-0"),
            (2, "collector-1"),
            (3, "evaluator-0"),
            (4, "collector-2"),
            (5, "collector-3"),
            (6, "collector-4"),
        ],
        id="set-up",
    ),
    pytest.param(
        ScaleRequest.add("collector", 1),
        [(0, "learner-0"), (1, "collector-0"), (2, "collector-1"), (3, "evaluator-0"), (4, "collector-2")],
        id="add",
    ),
    pytest.param(
        ScaleRequest.remove("collector", 1),
        [(0, "learner-0"), (1, "collector-0"), (3, "evaluator-0")],
        id="remove-highest-ranked",
    ),
    pytest.param(
        ScaleRequest.remove_named(["collector-0"]),
        [(0, "learner-0"), (2, "collector-1"), (3, "evaluator-0")],
        id="remove-named",
    ),
    pytest.param(
        ScaleRequest.set_replicas("collector", 2),
        [(0, "learner-0"), (1, "collector-0"), (2, "collector-1"), (3, "evaluator-0")],
        id="no-op",
    ),
]


@pytest.mark.parametrize(("request_", "expected"), CASES)
def test_membership_after_request(request_: ScaleRequest, expected: list[tuple[int, str]]) -> None:
    job, membership, workflow = base_state()
    plan = plan_scale(job, membership, workflow, request_)
    assert _names(plan.membership) == expected
    assert plan.membership.generation == (2 if plan.changed else 1)
    assert plan.replicas["collector"] == len(plan.membership.of_task("collector"))
    survivors = set(membership.replicas) & set(plan.membership.replicas)
    assert set(plan.removed) == set(membership.replicas) - survivors


REFUSED = [
    pytest.param(
        {"maxReplicas": 5},
        ScaleRequest.add("collector", 2),
        "out-of-bounds",
        "6 replicas in all (now 4), outside its bounds (minReplicas=3, maxReplicas=5)",
        id="above-max",
    ),
    pytest.param(
        {"minReplicas": 4},
        ScaleRequest.remove("collector", 1),
        "out-of-bounds",
        "3 replicas in all (now 4), outside its bounds (minReplicas=4, maxReplicas=unbounded)",
        id="below-min",
    ),
    pytest.param(
        {},
        ScaleRequest.remove("collector", 2),
        "out-of-bounds",
        "spec.tasks[1].replicas: task 'collector' has 2 replica(s) and must keep at least 1",
        id="task-to-0",
    ),
    pytest.param({}, ScaleRequest.set_replicas("collector", 0), "out-of-bounds", "must keep at least 1", id="set-0"),
    pytest.param(
        {},
        ScaleRequest.add("replay", 1),
        "not-found",
        "job default/j has no task 'replay' (tasks: learner, collector, evaluator)",
        id="unknown-task",
    ),
    pytest.param(
        {},
        ScaleRequest.remove_named(["collector-7"]),
        "not-found",
        "no live replica named 'collector-7' (replicas: learner-0, collector-0",
        id="unknown-replica",
    ),
    pytest.param(
        {},
        ScaleRequest.add("collector", 0),
        "invalid",
        "replicas: must be an integer of at least 1 (got 0)",
        id="add-0",
    ),
    pytest.param({}, ScaleRequest.set_replicas("collector", -1), "invalid", "(got -1)", id="negative"),
    pytest.param({}, ScaleRequest.remove_named([]), "invalid", "name at least one replica", id="no-names"),
]


@pytest.mark.parametrize(("spec", "request_", "reason", "message"), REFUSED)
def test_refused_requests_say_why(spec: dict[str, Any], request_: ScaleRequest, reason: str, message: str) -> None:
    job, membership, workflow = base_state(**spec)
    with pytest.raises(ScaleError) as err:
        plan_scale(job, membership, workflow, request_)
    assert err.value.reason == reason
    assert message in str(err.value)


def _dag(workflow: dict[str, Any]) -> list[tuple[str, str, dict[str, str]]]:
    tasks = workflow["spec"]["templates"][0]["dag"]["tasks"]
    return [(t["name"], t["template"], {p["name"]: p["value"] for p in t["arguments"]["parameters"]}) for t in tasks]


def test_scale_up_appends_dag_tasks_and_keeps_the_others() -> None:
    job, membership, workflow = base_state()
    plan = plan_scale(job, membership, workflow, ScaleRequest.set_replicas("collector", 4))
    patched = patched_workflow(workflow, plan.membership)
    assert _dag(patched)[:4] == _dag(workflow)
    assert _dag(patched)[4:] == [
        ("collector-2", "collector", {"index": "2", "rank": "4"}),
        ("collector-3", "collector", {"index": "3", "rank": "5"}),
    ]
    assert patched["metadata"]["annotations"][GENERATION_ANNOTATION] == "2"
    templates = {t["name"]: t for t in patched["spec"]["templates"]}
    assert templates["collector"]["metadata"]["annotations"]["diengine/replicas"] == "6"
    assert workflow_patch(plan.membership, patched) == []


def test_scale_down_retires_dag_tasks_in_place_and_new_replicas_never_reuse_their_names() -> None:
    job, membership, workflow = base_state()
    down = plan_scale(job, membership, workflow, ScaleRequest.remove_named(["collector-0"]))
    patched = patched_workflow(workflow, down.membership)
    assert [(n, t) for n, t, _ in _dag(patched)] == [
        ("learner-0", "learner"),
        ("collector-0", RETIRED_TEMPLATE),
        ("collector-1", "collector"),
        ("evaluator-0", "evaluator"),
    ]
    assert {"name": RETIRED_TEMPLATE, "suspend": {"duration": "0"}} in patched["spec"]["templates"]
    assert list(read_dag(patched).retired) == ["collector-0"]
    # back up to two collectors: index 0 was used by a DAG task, so the new one is collector-2; rank 1 stays
    # vacant (evaluator-0, rank 3, holds collector-0's name there and would never dial a newcomer at rank 1):
    # the newcomer takes rank 4, above every live replica, and dials them all
    up = plan_scale(down.job, down.membership, patched, ScaleRequest.add("collector", 1))
    assert up.added == (Replica(4, "collector", 2),)
    again = patched_workflow(patched, up.membership)
    assert _dag(again)[-1] == ("collector-2", "collector", {"index": "2", "rank": "4"})
    assert [t["name"] for t in again["spec"]["templates"]].count(RETIRED_TEMPLATE) == 1


def test_a_replica_already_retired_in_the_workflow_is_dropped_from_the_membership() -> None:
    job, membership, workflow = base_state()
    down = plan_scale(job, membership, workflow, ScaleRequest.remove("collector", 1))
    patched = patched_workflow(workflow, down.membership)
    # the ConfigMap was not updated (crash between the writes): the planner trusts the Workflow's tombstones
    plan = plan_scale(job, membership, patched, ScaleRequest.sync())
    assert "collector-1" not in [f"{r.task}-{r.index}" for r in plan.membership.replicas]
    assert plan.added == (Replica(4, "collector", 2),)


def test_job_spec_patch_sets_only_changed_counts() -> None:
    manifest = base_job().to_manifest()
    ops = job_spec_patch(manifest, {"learner": 1, "collector": 5, "evaluator": 1})
    assert ops == [
        {"op": "test", "path": "/spec/tasks/1/name", "value": "collector"},
        {"op": "replace", "path": "/spec/tasks/1/replicas", "value": 5},
    ]
    assert job_spec_patch(manifest, {"learner": 1, "collector": 2, "evaluator": 1}) == []


def test_sync_follows_a_hand_edit_of_the_spec() -> None:
    job, membership, workflow = base_state()
    edited = job.with_replicas("collector", 3)
    plan = plan_scale(edited, membership, workflow, ScaleRequest.sync())
    assert plan.added == (Replica(4, "collector", 2),)
    assert plan.replicas == {"learner": 1, "collector": 3, "evaluator": 1}


def test_a_workflow_without_the_entry_dag_is_refused() -> None:
    job, membership, _ = base_state()
    with pytest.raises(ScaleError, match="no DAG template 'dijob'"):
        plan_scale(job, membership, {"metadata": {"name": "x"}, "spec": {"templates": []}}, ScaleRequest.sync())


def _stamped(stamp: str | None, collectors: int = 2) -> dict[str, Any]:
    manifest = base_job().with_replicas("collector", collectors).to_manifest()
    if stamp is not None:
        manifest["metadata"].setdefault("annotations", {})[GENERATION_ANNOTATION] = stamp
    return manifest


def _gen(generation: int) -> Membership:
    return Membership(generation, ())


@pytest.mark.parametrize(
    ("case", "stamp", "generation", "current"),
    [
        ("(1) idle new job: no stamp stands for generation 1", None, 1, True),
        ("(1) idle job after a scale: stamp = generation", "3", 3, True),
        ("(2)/(4) a request committed since the spec was written", "3", 4, False),
        ("(3) A's spec (stamp 2) after B's commit (3)", "2", 3, False),
        ("(5) a commit whose writer crashed", None, 2, False),
        ("unreadable stamp: older than any membership", "x", 1, False),
    ],
)
def test_sync_follows_the_spec_only_when_it_is_current(
    case: str, stamp: str | None, generation: int, current: bool
) -> None:
    assert spec_is_current(_stamped(stamp), _gen(generation)) is current, case


@pytest.mark.parametrize(("stamp", "value"), [(None, 1), ("4", 4), ("junk", 0)])
def test_spec_generation(stamp: str | None, value: int) -> None:
    assert spec_generation(_stamped(stamp)) == value


KEY = "/metadata/annotations/diengine~1membership-generation"
NEW_MAP = {"op": "add", "path": "/metadata/annotations", "value": {}}
SPEC_5 = [
    {"op": "test", "path": "/spec/tasks/1/name", "value": "collector"},
    {"op": "replace", "path": "/spec/tasks/1/replicas", "value": 5},
]


@pytest.mark.parametrize(
    ("case", "stamp", "generation", "collectors", "ops"),
    [
        ("counts and stamp in one patch", "2", 3, 5, [*SPEC_5, {"op": "add", "path": KEY, "value": "3"}]),
        ("first stamp adds the annotations", None, 2, 5, [*SPEC_5, NEW_MAP, {"op": "add", "path": KEY, "value": "2"}]),
        ("counts already right: the stamp alone", "2", 3, 2, [{"op": "add", "path": KEY, "value": "3"}]),
        ("already written", "3", 3, 2, []),
        ("written, then edited by hand: the edit is kept", "3", 3, 5, []),
        ("a stale writer (stamp is newer) writes nothing", "4", 3, 5, []),
    ],
)
def test_job_spec_patch_stamps_and_never_goes_back(
    case: str, stamp: str | None, generation: int, collectors: int, ops: list[dict[str, Any]]
) -> None:
    manifest = _stamped(stamp)
    if stamp is None:
        manifest["metadata"].pop("annotations", None)
    counts = {"learner": 1, "collector": collectors, "evaluator": 1}
    assert job_spec_patch(manifest, counts, generation) == ops, case
    if ops:
        patched = jsonpatch.apply_patch(manifest, ops)
        assert spec_generation(patched) == generation and job_spec_patch(patched, counts, generation) == []


@pytest.mark.parametrize(
    ("stamp", "generation", "ops"),
    [("2", 3, [{"op": "add", "path": KEY, "value": "3"}]), ("3", 3, []), ("4", 3, []), (None, 1, [])],
)
def test_stamp_patch_is_metadata_only_and_monotonic(stamp: str | None, generation: int, ops: list[Any]) -> None:
    assert stamp_patch(_stamped(stamp), generation) == ops


def test_the_argo_ui_annotations_follow_the_membership() -> None:
    """Description and the columns' annotations after a scale-up are what rendering the bigger job writes."""
    from dihera import plan_membership, render
    from dihera.scaling import workflow_patch
    from tests.builders import job as job_manifest

    dqn = load_job(job_manifest(task("learner"), task("collector", replicas=2), name="dqn"))
    first = render(dqn).workflow
    bigger = plan_membership(dqn.with_replicas("collector", 5), plan_membership(dqn, None))
    ops = workflow_patch(bigger, first)
    on_meta = [o for o in ops if "/metadata/annotations/" in o["path"]]
    patched = {o["path"].rsplit("/", 1)[1].replace("~1", "/"): o["value"] for o in on_meta}
    rendered = render(dqn.with_replicas("collector", 5), membership=bigger).workflow["metadata"]["annotations"]
    assert patched == {k: v for k, v in rendered.items() if k != "workflows.argoproj.io/title"}
    description = patched["workflows.argoproj.io/description"]
    assert description.startswith("6 replicas: learner 1, collector 5 (membership generation 2).\n\n")
    assert "| collector | collector | 5 |" in description
    assert patched["diengine/task-replicas"] == "learner 1, collector 5"
    assert (patched["diengine/replicas"], patched["diengine/membership-generation"]) == ("6", "2")


def _continue_on(workflow: dict[str, Any]) -> dict[str, Any]:
    return {t["name"]: t.get("continueOn") for t in workflow["spec"]["templates"][0]["dag"]["tasks"]}


def test_drop_replica_tasks_go_on_failed_in_the_dag_and_so_do_their_new_replicas() -> None:
    tasks = copy.deepcopy(BASE["spec"]["tasks"])
    tasks[1]["failurePolicy"] = "DropReplica"
    job, membership, workflow = base_state(tasks=tasks)
    failed_ok = {"failed": True}
    assert _continue_on(workflow) == {
        "learner-0": None,
        "collector-0": failed_ok,
        "collector-1": failed_ok,
        "evaluator-0": None,
    }
    down = plan_scale(job, membership, workflow, ScaleRequest.remove_named(["collector-0"]))  # the drop
    patched = patched_workflow(workflow, down.membership)
    assert _continue_on(patched)["collector-0"] == failed_ok  # retired in place, the rest untouched
    up = plan_scale(down.job, down.membership, patched, ScaleRequest.add("collector", 1))
    again = patched_workflow(patched, up.membership)
    assert _continue_on(again)["collector-2"] == failed_ok
    learners = plan_scale(job, membership, workflow, ScaleRequest.add("learner", 1))
    assert _continue_on(patched_workflow(workflow, learners.membership))["learner-1"] is None


def test_a_job_without_drop_replica_renders_no_continue_on() -> None:
    _, _, workflow = base_state()
    assert set(_continue_on(workflow).values()) == {None}


def test_after_any_scale_every_live_replica_is_dialled_by_the_ones_above_it() -> None:
    """The refilled-rank decision: in DI-engine's mesh, rank r dials the entries 0..r-1 of DI_NODES as it read
    them at its start, never again. A vacancy in the middle is never refilled (the replicas above it hold the
    departed replica's name there, so they would never dial a newcomer there): newcomers go above every live
    replica, so each pair of live replicas is linked, whatever order the scales came in. A vacancy at the top
    is reused."""
    job, membership, workflow = base_state()  # learner-0, collector-0, collector-1, evaluator-0 (ranks 0-3)
    started: dict[Replica, list[str]] = {}  # each replica's DI_NODES as it read it at its start

    def start(members: Membership) -> None:
        nodes = node_lists(job, members, RenderSettings())["DI_NODES"].split(",")
        for r in members.replicas:
            started.setdefault(r, nodes)

    start(membership)
    steps = [
        ScaleRequest.remove_named(["collector-0"]),  # rank 1 vacant, below collector-1 and evaluator-0
        ScaleRequest.add("collector", 1),  # collector-2 at rank 4, not 1
        ScaleRequest.remove_named(["collector-2"]),  # the top rank vacant
        ScaleRequest.add("collector", 2),  # collector-3 reuses rank 4 (nobody above it), collector-4 rank 5
    ]
    for request in steps:
        plan = plan_scale(job, membership, workflow, request)
        job, membership, workflow = plan.job, plan.membership, patched_workflow(workflow, plan.membership)
        start(membership)
    assert _names(membership) == [
        (0, "learner-0"),
        (2, "collector-1"),
        (3, "evaluator-0"),
        (4, "collector-3"),
        (5, "collector-4"),
    ]
    for high in membership.replicas:
        for low in membership.replicas:
            if low.rank < high.rank:  # high dials low's entry: it must name low's pod
                assert started[high][low.rank].startswith(f"{job.name}-{low.task}-{low.index}."), (high, low)
    assert started[membership.replicas[-1]][1] == "127.0.0.1"  # the vacancy, refused quietly
