"""When the controller syncs spec.tasks[].replicas and the running membership, and which way (table-driven).

Memberships: ``mem(g, c)`` is generation g with learner-0 and c collectors. ``stamp`` is the DIJob's
``diengine/membership-generation`` (none: 1), written by the scaler with the spec's counts.
"""

from __future__ import annotations

from typing import Any

import pytest

from dihera.membership import Membership, Replica
from dihera.model import DIJob
from dihera.scaling.spec_edit import EditAction, plan_spec_edit
from dihera.validation import load_job
from tests.builders import WorkflowBuilder, job, task


def mem(generation: int, collectors: int) -> Membership:
    replicas = [Replica(0, "learner", 0), *(Replica(1 + i, "collector", i) for i in range(collectors))]
    return Membership(generation, tuple(replicas))


LIVE = mem(1, 2)


def dijob(collectors: int, extra_task: bool = False) -> DIJob:
    tasks = [task("learner", replicas=1), task("collector", replicas=collectors)]
    if extra_task:
        tasks.append(task("evaluator", replicas=1))
    return load_job(job(*tasks, name="j"))


def workflow(generation: str | None = None, retired: tuple[str, ...] = (), collectors: int = 2) -> dict[str, Any]:
    replicas = [("learner", 0), *(("collector", i) for i in range(collectors))]
    built = WorkflowBuilder("j").annotations({}).dag(replicas, retired=retired)
    if generation is not None:
        built.membership_generation(generation)
    return built.obj()


SCALE, CATCH_UP, NONE = EditAction.SCALE, EditAction.CATCH_UP, EditAction.NONE


@pytest.mark.parametrize(
    ("case", "collectors", "stamp", "generation", "observed", "membership", "wf", "action", "in_message"),
    [
        ("new job, spec as created, no stamp", 2, 1, 1, None, LIVE, workflow(), NONE, ""),
        # (1) kubectl edit on an idle job: the stamp is the membership's generation
        ("(1) edit 2 -> 5 of a new job", 5, 1, 2, 1, LIVE, workflow(), SCALE, "collector 2 -> 5"),
        ("(1) edit 3 -> 5 after a scale", 5, 2, 4, 3, mem(2, 3), workflow("2", collectors=3), SCALE, "3 -> 5"),
        ("(1) edit seen and refused before", 5, 1, 2, 2, LIVE, workflow(), NONE, ""),
        ("(1) retired replica is not live", 2, 1, 2, 1, LIVE, workflow(retired=("collector-1",)), SCALE, "1 -> 2"),
        # (2) server request in flight: committed generation 2, spec not written yet
        ("(2) before its Workflow patch", 2, 1, 1, 1, mem(2, 3), workflow("1"), CATCH_UP, "generation 2 is newer"),
        ("(2) before its spec write", 2, 1, 1, 1, mem(2, 3), workflow("2", collectors=3), CATCH_UP, "written at 1"),
        ("(2) spec and stamp written", 3, 2, 2, 1, mem(2, 3), workflow("2", collectors=3), NONE, ""),
        # (3) A committed 2 (3 collectors), B committed 3 (4), A's spec write lands last: not synced back
        ("(3) A's spec after B's commit", 3, 2, 2, 1, mem(3, 4), workflow("3", collectors=4), CATCH_UP, "3 is newer"),
        ("(3) B's spec written", 4, 3, 3, 2, mem(3, 4), workflow("3", collectors=4), NONE, ""),
        # (4) kubectl edit racing a server request
        ("(4) edit lands after the request's commit", 5, 1, 2, 1, mem(2, 3), workflow("2", collectors=3), CATCH_UP, ""),
        ("(4) edit after the request's spec", 5, 2, 3, 2, mem(2, 3), workflow("2", collectors=3), SCALE, "3 -> 5"),
        # (5) scaler crash between ConfigMap and Workflow: the controller finishes the change
        ("(5) crashed server request", 2, 1, 1, 1, mem(2, 3), workflow("1"), CATCH_UP, ""),
        ("(5) crashed sync, before the stamp", 3, 1, 2, 2, mem(2, 3), workflow("1"), CATCH_UP, ""),
        ("(5) edit after a crashed request", 5, 1, 2, 1, mem(2, 3), workflow("1"), CATCH_UP, ""),
        ("unreadable stamp counts as 0", 2, 0, 1, 1, LIVE, workflow(), CATCH_UP, ""),
        ("no membership yet", 5, 1, 2, 1, None, workflow(), NONE, ""),
        ("no Workflow", 5, 1, 2, 1, LIVE, None, NONE, ""),
    ],
)
def test_plan_spec_edit(
    case: str,
    collectors: int,
    stamp: int,
    generation: int,
    observed: int | None,
    membership: Membership | None,
    wf: dict[str, Any] | None,
    action: EditAction,
    in_message: str,
) -> None:
    edit = plan_spec_edit(dijob(collectors), stamp, generation, observed, membership, wf)
    assert edit.action is action, case
    assert in_message in edit.message, case


def test_a_new_task_on_a_running_job_is_refused_naming_the_field_once() -> None:
    edit = plan_spec_edit(dijob(2, extra_task=True), 1, 2, 1, LIVE, workflow())
    assert edit.action is EditAction.REFUSE
    assert edit.message.startswith("spec.tasks: the tasks of a running job cannot change")
    assert "spec: learner, collector, evaluator" in edit.message
    assert plan_spec_edit(dijob(2, extra_task=True), 1, 2, 2, LIVE, workflow()).action is EditAction.NONE
