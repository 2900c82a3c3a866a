"""The Python API builds the same jobs as the YAML examples."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest
import yaml
from hera.workflows import Workflow

from dihera import InvalidJobError, load_job, render
from dihera import experiment as ex

ROOT = Path(__file__).resolve().parents[2]


def test_python_example_equals_the_yaml_example() -> None:
    build = runpy.run_path(str(ROOT / "workflows/python/atari_dqn.py"))["build"]
    from_python = build()
    from_yaml = load_job(yaml.safe_load((ROOT / "workflows/atari-dqn.yaml").read_text()))
    assert from_python.to_manifest() == from_yaml.to_manifest()
    assert render(from_python).objects() == render(from_yaml).objects()


def test_task_from_image_and_command() -> None:
    job = ex.dijob(
        "cartpole",
        [
            ex.task(
                "learner",
                image="ding:1",
                command=["ditask"],
                args=["--labels", "learner"],
                env={"A": "1"},
                resources={"limits": {"cpu": "2"}},
            ),
            ex.task("collector", replicas=3, image="ding:1", command=["ditask"]),
        ],
        backoffLimit=1,
    )
    assert [t.replicas for t in job.tasks] == [1, 3]
    c = job.tasks[0].template["spec"]["containers"][0]
    assert c == {
        "name": "main",
        "image": "ding:1",
        "command": ["ditask"],
        "args": ["--labels", "learner"],
        "env": [{"name": "A", "value": "1"}],
        "resources": {"limits": {"cpu": "2"}},
    }
    manifest = job.to_manifest()
    assert manifest["spec"]["backoffLimit"] == 1
    assert load_job(manifest) == job


def test_workflow_is_a_hera_object_that_renders_like_render() -> None:
    job = ex.dijob("cartpole", [ex.task("learner", image="ding:1")])
    wf = ex.workflow(job)
    assert isinstance(wf, Workflow)
    assert wf.to_dict() == render(job).workflow


def test_invalid_jobs_raise_with_every_problem() -> None:
    with pytest.raises(InvalidJobError) as err:
        ex.dijob("x", [ex.task("collector", image="i"), ex.task("collector", image="i")], priority="urgent")
    assert len(err.value.problems) == 5


def test_task_needs_image_or_template() -> None:
    with pytest.raises(ValueError, match="either image"):
        ex.task("learner")
