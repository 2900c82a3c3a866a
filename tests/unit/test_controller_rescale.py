"""When the controller applies a hand edit of spec.tasks[].replicas to a running job (table-driven)."""

from __future__ import annotations

from typing import Any

import pytest

from dihera.controller.rescale import EditAction, converged_generation, plan_spec_edit
from dihera.membership import Membership, Replica
from dihera.model import DIJob
from dihera.validation import load_job
from tests.unit.builders import job, task

#: learner-0 (rank 0), collector-0 (rank 1), collector-1 (rank 2), generation 1
LIVE = Membership(1, (Replica(0, "learner", 0), Replica(1, "collector", 0), Replica(2, "collector", 1)))
SCALED = Membership(2, LIVE.replicas)


def dijob(collectors: int, extra_task: bool = False) -> DIJob:
    tasks = [task("learner", replicas=1), task("collector", replicas=collectors)]
    if extra_task:
        tasks.append(task("evaluator", replicas=1))
    return load_job(job(*tasks, name="j"))


def workflow(generation: str | None = None, retired: tuple[str, ...] = ()) -> dict[str, Any]:
    names = ["learner-0", "collector-0", "collector-1"]
    tasks = [{"name": n, "template": "dihera-retired" if n in retired else n.rsplit("-", 1)[0]} for n in names]
    annotations = {"diengine/membership-generation": generation} if generation is not None else {}
    return {
        "metadata": {"name": "j", "annotations": annotations},
        "spec": {"templates": [{"name": "dijob", "dag": {"tasks": tasks}}]},
    }


@pytest.mark.parametrize(
    ("case", "collectors", "generation", "observed", "membership", "wf", "action", "in_message"),
    [
        ("new job, spec as created", 2, 1, None, LIVE, workflow(), EditAction.NONE, ""),
        ("edited 2 -> 5", 5, 2, 1, LIVE, workflow(), EditAction.SCALE, "collector 2 -> 5"),
        ("edit already observed", 5, 2, 2, LIVE, workflow(), EditAction.NONE, ""),
        ("spec written by the scaler (counts match)", 2, 3, 2, SCALED, workflow("2"), EditAction.NONE, ""),
        ("scaler between commit and Workflow patch", 5, 2, 1, SCALED, workflow("1"), EditAction.WAIT, "generation 2"),
        ("fresh Workflow counts as generation 1", 3, 2, 1, LIVE, workflow(), EditAction.SCALE, "collector 2 -> 3"),
        ("retired replica is not live", 2, 2, 1, LIVE, workflow(retired=("collector-1",)), EditAction.SCALE, "1 -> 2"),
        ("no membership yet", 5, 2, 1, None, workflow(), EditAction.NONE, ""),
        ("no Workflow", 5, 2, 1, LIVE, None, EditAction.NONE, ""),
    ],
)
def test_plan_spec_edit(
    case: str,
    collectors: int,
    generation: int,
    observed: int | None,
    membership: Membership | None,
    wf: dict[str, Any] | None,
    action: EditAction,
    in_message: str,
) -> None:
    edit = plan_spec_edit(dijob(collectors), generation, observed, membership, wf)
    assert edit.action is action, case
    assert in_message in edit.message, case


def test_a_new_task_on_a_running_job_is_refused_naming_the_field() -> None:
    edit = plan_spec_edit(dijob(2, extra_task=True), 2, 1, LIVE, workflow())
    assert edit.action is EditAction.REFUSE
    assert edit.message.startswith("spec.tasks: the tasks of a running job cannot change")
    assert "spec: learner, collector, evaluator" in edit.message


@pytest.mark.parametrize(("annotation", "generation"), [(None, 1), ("4", 4), ("junk", 0)])
def test_converged_generation(annotation: str | None, generation: int) -> None:
    assert converged_generation(workflow(annotation)) == generation
