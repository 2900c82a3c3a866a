"""Pipelines (dihera.pipelines): a DIJob trained, its stored policy evaluated and exported, as one Workflow."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dihera import experiment as ex
from dihera.cli.experiments import experiment_manifest, load_experiment
from dihera.pipelines import PipelineError
from dihera.validation import load_job
from tests.builders import job, task

REPO = Path(__file__).resolve().parents[2]


def trained(**spec: Any) -> Any:
    doc = job(task("learner"), task("collector", replicas=2), name="dqn", **spec)
    doc["spec"]["artifacts"] = [{"name": "policy", "path": "/workspace/ckpt/final.pth.tar"}]
    doc["spec"]["tasks"][0]["template"]["spec"]["volumes"] = [{"name": "w", "emptyDir": {}}]
    doc["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["volumeMounts"] = [
        {"name": "w", "mountPath": "/workspace"}
    ]
    return load_job(doc, namespace="rl")


EVALUATE = ex.step("engine:1", ["python", "-m", "ev", ex.POLICY_PATH], outputs={"mean": "/tmp/out/mean"})
EXPORT = ex.step(
    "engine:1", ["python", "-m", "ex", ex.POLICY_PATH, "/tmp/out/m.pt"], artifacts={"model": "/tmp/out/m.pt"}
)


def templates(wf: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["name"]: t for t in wf["spec"]["templates"]}


def test_train_then_locate_then_evaluate_then_export() -> None:
    pipe = ex.pipeline("p", trained(), policy="policy", evaluate=EVALUATE, export=EXPORT, image="dihera:1")
    wf = ex.pipeline_workflow(pipe).to_dict()
    assert wf == ex.pipeline_workflow(pipe).to_dict(), "deterministic"
    by_name = templates(wf)
    dag = {t["name"]: t.get("dependencies", []) for t in by_name["pipeline"]["dag"]["tasks"]}
    assert dag == {"train": [], "locate": ["train"], "evaluate": ["locate"], "export": ["evaluate"]}
    train = by_name["train"]["resource"]
    manifest = json.loads(train["manifest"])
    assert manifest["metadata"]["name"] == "p-train" and manifest["metadata"]["labels"]["diengine/experiment"] == "p"
    assert train["setOwnerReference"] is True and train["successCondition"] == "status.phase == Succeeded"
    locate = by_name["locate"]["container"]["command"]
    assert locate[:3] == ["dihera", "experiment", "artifact-key"]
    assert locate[locate.index("--job") + 1] == "p-train" and locate[locate.index("--artifact") + 1] == "policy"
    for step in ("evaluate", "export"):
        (policy,) = by_name[step]["inputs"]["artifacts"]
        assert policy == {"name": "policy", "path": "/tmp/policy", "s3": {"key": "{{inputs.parameters.key}}"}}
        (arg,) = next(t for t in by_name["pipeline"]["dag"]["tasks"] if t["name"] == step)["arguments"]["parameters"]
        assert arg == {"name": "key", "value": "{{tasks.locate.outputs.parameters.key}}"}
    assert by_name["evaluate"]["outputs"]["parameters"] == [{"name": "mean", "valueFrom": {"path": "/tmp/out/mean"}}]
    key = "dihera/rl/p/{{workflow.uid}}/{{pod.name}}/model/m.pt"  # whatever the repository's key format
    as_is = {"name": "model", "path": "/tmp/out/m.pt", "archive": {"none": {}}, "s3": {"key": key}}  # as it is
    assert by_name["export"]["outputs"]["artifacts"] == [as_is]


def test_without_export_three_steps() -> None:
    pipe = ex.pipeline("p", trained(), policy="policy", evaluate=EVALUATE, image="dihera:1")
    assert [t["name"] for t in templates(ex.pipeline_workflow(pipe).to_dict())["pipeline"]["dag"]["tasks"]] == [
        "train", "locate", "evaluate"
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"name": "Bad_Name"}, "name: 'Bad_Name' must match"),
        ({"policy": "weights"}, "policy: 'weights' is not one of the job's spec.artifacts (policy)"),
        ({"evaluate": ex.step("i", [])}, "evaluate.command: empty"),
        (
            {"evaluate": ex.step("i", ["x"], outputs={"m": "relative"})},
            "evaluate.outputs.m: 'relative' is not an absolute",
        ),
        ({"export": ex.step("i", ["x"], artifacts={"-bad": "/a"})}, "export.artifacts: '-bad' must match"),
        ({"locate_timeout": 0}, "locate_timeout: 0 must be at least 1 second"),
    ],
)
def test_what_cannot_run_is_refused_naming_the_field(kwargs: dict[str, Any], named: str) -> None:
    given: dict[str, Any] = {"name": "p", "policy": "policy", "evaluate": EVALUATE, "image": "dihera:1", **kwargs}
    name = given.pop("name")
    with pytest.raises(PipelineError, match=named.replace("(", r"\(").replace(")", r"\)")):
        ex.pipeline(name, trained(), **given)


def test_the_example_is_found_by_the_cli_and_takes_the_evaluators_best_policy() -> None:
    pipe = load_experiment(str(REPO / "workflows" / "python" / "cartpole_pipeline.py"))
    wf = experiment_manifest(pipe)
    assert wf["metadata"]["name"] == "cartpole-pipeline" and wf["kind"] == "Workflow"
    locate = templates(wf)["locate"]["container"]["command"]
    assert locate[locate.index("--artifact") + 1] == "best-policy"
    assert [a["name"] for a in templates(wf)["export"]["outputs"]["artifacts"]] == ["model"]
