"""A job's progress in its status: the Workflow's, and per task the sum of its live replicas' node progress."""

from __future__ import annotations

from typing import Any

import pytest

from dihera.controller.decide.progress import parse_progress, task_progress, workflow_progress
from dihera.controller.decide.replicas import ReplicaState
from dihera.controller.decide.status import status_patch
from dihera.kube.watch.slim import slim_workflow
from tests.builders import pod_node
from tests.unit.jobviews import JOB, T1, T2, observe, running, status_after, workflow


def nodes(**progress: str) -> dict[str, Any]:
    """Pod nodes of replicas ``learner_0="3/10"`` (attempt 0) with that progress."""
    return {
        f"n{i}": pod_node(f"{JOB}.{r.replace('_', '-')}", "Running", progress=p)
        for i, (r, p) in enumerate(progress.items())
    }


@pytest.mark.parametrize(
    ("text", "parsed"),
    [("3/10", (3, 10)), ("0/1", (0, 1)), ("10/10", (10, 10)), ("11/10", None), ("1/0", None), ("", None), (None, None),
     ("3 / 10", None), ("-1/3", None), ("a/b", None)],
)  # fmt: skip
def test_parse_progress_accepts_what_argo_accepts(text: object, parsed: tuple[int, int] | None) -> None:
    assert parse_progress(text) == parsed


def test_task_progress_sums_each_tasks_replicas_and_skips_invalid_or_missing() -> None:
    def state(task: str, index: int, progress: str | None) -> ReplicaState:
        return ReplicaState(task, index, index, f"{JOB}-{task}-{index}", 0, progress=progress)

    states = [
        state("learner", 0, "340/2000"),
        state("collector", 0, "0/1"),
        state("collector", 1, "1/1"),
        state("collector", 2, None),
        state("evaluator", 0, "junk"),
    ]
    assert task_progress(states) == {"learner": "340/2000", "collector": "1/2"}
    assert task_progress([]) == {}


def test_the_status_carries_the_workflows_progress_and_each_tasks() -> None:
    wf = workflow(nodes=nodes(learner_0="340/2000", collector_0="0/1", collector_1="5/5"))
    wf["status"]["progress"] = "345/2006"  # Argo's sum also counts nodes no longer replicas
    status = status_after(observe(wf, running()), {}, T1).status
    assert status["progress"] == "345/2006"
    assert status["taskProgress"] == {"learner": "340/2000", "collector": "5/6"}
    assert workflow_progress({"status": {"progress": "0/0"}}) is None


def test_a_new_progress_is_one_status_write_and_the_same_progress_none() -> None:
    wf = workflow(nodes=nodes(learner_0="20/2000"))
    first = status_after(observe(wf, running()), {}, T1)
    assert status_after(observe(wf, running()), first.status, T2).changed is False
    later = workflow(nodes=nodes(learner_0="40/2000"))
    update = status_after(observe(later, running()), first.status, T2)
    assert update.changed and update.status["taskProgress"] == {"learner": "40/2000"}
    assert {"op": "add", "path": "/status/taskProgress", "value": {"learner": "40/2000"}} in status_patch(
        {"metadata": {}, "status": first.status}, update.status
    )


def test_no_progress_yet_writes_no_progress_fields() -> None:
    status = status_after(observe(workflow(), running()), {}, T1).status
    assert "progress" not in status and "taskProgress" not in status


def test_the_watch_cache_keeps_what_progress_reads() -> None:
    wf = workflow(nodes=nodes(learner_0="340/2000", collector_0="0/1"))
    wf["status"]["progress"] = "340/2001"
    full = status_after(observe(wf, running()), {}, T1).status
    assert status_after(observe(slim_workflow(wf), running()), {}, T1).status == full
