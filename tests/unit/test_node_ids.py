"""The task-order rule (dihera/node_ids.py): no `none` task before DI-engine tasks that take roles from node ids."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from dihera import validate
from tests.builders import DIJobBuilder, TaskBuilder, job

STOCK = ["ditask", "--platform", "k8s", "--topology", "mesh", "--main", "ding.example.dqn.main", "--ports", "22270"]
REDIS = ["redis-server", "--port", "6379"]
EXAMPLES = Path(__file__).resolve().parents[2] / "workflows"


def di(type_: str, *argv: str, replicas: int = 1) -> dict[str, Any]:
    return TaskBuilder(type_).name(type_).replicas(replicas).command(*(argv or STOCK)).obj()


def none(name: str, *argv: str) -> dict[str, Any]:
    return TaskBuilder("none").name(name).command(*(argv or REDIS)).obj()


def messages(manifest: dict[str, Any]) -> list[str]:
    return [str(p) for p in validate(manifest)]


def test_a_none_task_before_stock_ditask_tasks_is_refused_naming_both() -> None:
    manifest = job(none("redis"), di("learner"), di("evaluator"), di("collector", replicas=2))
    assert messages(manifest) == [
        "spec.tasks[0]: the none task 'redis' is listed before the DI-engine task 'learner' (spec.tasks[1]), which "
        "runs `ditask` without --labels: DI-engine's stock programs take the role from the node id, which is "
        "DI_RANK (0 learner, 1 evaluator, others collectors); ranks follow the spec's order, so it would shift "
        "the DI-engine roles: list none tasks after the DI-engine tasks"
    ]


def test_a_none_task_between_them_names_the_next_di_engine_task() -> None:
    (message,) = messages(job(di("learner"), none("redis"), di("evaluator"), di("collector")))
    assert message.startswith("spec.tasks[1]: the none task 'redis' is listed before the DI-engine task 'evaluator'")


def test_every_none_task_before_is_named() -> None:
    manifest = job(none("redis"), none("tensorboard", "tensorboard", "--logdir", "/logs"), di("learner"))
    assert [m.split(":", 1)[0] for m in messages(manifest)] == ["spec.tasks[0]", "spec.tasks[1]"]


@pytest.mark.parametrize(
    "argv",
    [
        ["/bin/bash", "-c", "cd /work && ditask --platform k8s --topology star --labels learner --main m.main"],
        ["ditask", "--labels", "learner", "--topology=star", "--main", "m.main"],
        ["/opt/ding/bin/ditask", "--platform", "k8s", "--main", "m.main"],  # no --labels, default topology
        ["ditask", "--mq-type", "redis", "--node-ids", "$(DI_RANK)", "--main", "ding.example.dqn.main"],
    ],
)
def test_star_topology_or_node_id_roles_are_refused(argv: list[str]) -> None:
    (message,) = messages(job(none("redis"), di("learner", *argv), di("collector", *argv)))
    assert "list none tasks after the DI-engine tasks" in message
    if "star" in " ".join(argv):
        assert "`ditask --topology star`, whose rank 0 is the hub every process dials" in message


@pytest.mark.parametrize(
    "tasks",
    [
        pytest.param([di("learner"), di("evaluator"), di("collector"), none("redis")], id="none-tasks-last"),
        pytest.param(
            [none("redis"), di("learner", "ditask", "--labels", "learner", "--topology", "mesh", "--main", "m.main")],
            id="labels-in-a-mesh",
        ),
        pytest.param(
            [none("coordinator", "ding", "-m", "dist", "--module", "coordinator"),
             di("collector", "ding", "-m", "dist", "--module", "collector")],
            id="no-ditask",
        ),
        pytest.param([none("serial", "ding", "-m", "serial", "-c", "c.py"), none("other")], id="only-none-tasks"),
        pytest.param([none("redis"), di("learner", "python", "-m", "my_trainer")], id="learner-without-ditask"),
    ],
)
def test_other_jobs_are_left_alone(tasks: list[dict[str, Any]]) -> None:
    assert messages(job(*tasks)) == []


def test_a_running_job_is_not_refused_afterwards() -> None:
    manifest = DIJobBuilder().task(none("redis"), di("learner")).status(phase="Running").obj()
    assert messages(manifest) == []


def test_the_examples_pass() -> None:
    for path in sorted(EXAMPLES.glob("*.yaml")):
        assert messages(yaml.safe_load(path.read_text(encoding="utf-8"))) == [], path.name
