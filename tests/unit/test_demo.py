"""`make demo`'s copy of the cartpole job (ci/demo.py): the local image on the real node, or the user's
image without the local node's placement on $KUBECONFIG's cluster."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from ci import demo  # noqa: E402
from ci.demo import EVALUATED, SHOWN, curve_url, evaluation_workflow, prepare_job, shown, training_line  # noqa: E402
from ci.devcluster import realnode  # noqa: E402
from dihera.validation import load_job, validate  # noqa: E402

CARTPOLE = REPO / "workflows" / "cartpole-dqn.yaml"


def _pods(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [t["template"]["spec"] for t in doc["spec"]["tasks"]]


def test_on_the_local_node_every_container_runs_the_local_image_never_pulled() -> None:
    doc = yaml.safe_load(CARTPOLE.read_text())
    out = prepare_job(doc, "dihera.local/di-engine:0.5.3", local_node=True)
    containers = [c for pod in _pods(out) for c in pod["containers"]]
    assert {(c["image"], c["imagePullPolicy"]) for c in containers} == {("dihera.local/di-engine:0.5.3", "Never")}
    key, value = realnode.NODE_LABEL
    assert all(pod["nodeSelector"] == {key: value} for pod in _pods(out))
    assert doc == yaml.safe_load(CARTPOLE.read_text()), "the input is left as it was"
    assert validate(out) == [] and load_job(out).name == "cartpole-dqn"


def test_on_a_given_cluster_the_local_node_placement_is_dropped_and_the_image_kept_unless_given() -> None:
    doc = yaml.safe_load(CARTPOLE.read_text())
    out = prepare_job(doc, None, local_node=False)
    for pod in _pods(out):
        assert "nodeSelector" not in pod and "tolerations" not in pod, pod
        assert [c["image"] for c in pod["containers"]] == ["dihera/di-engine:0.5.3"]
    mine = prepare_job(doc, "registry.example/di-engine:0.5.3", local_node=False)
    assert {c["image"] for pod in _pods(mine) for c in pod["containers"]} == {"registry.example/di-engine:0.5.3"}
    assert {c["imagePullPolicy"] for pod in _pods(mine) for c in pod["containers"]} == {"IfNotPresent"}


def test_the_demo_shows_the_examples_progress_lines_and_leaves_out_di_engines_own() -> None:
    lines = [
        "[pod/cartpole-dqn-1/di-container] dihera-eval return=57.3 iter=120\n",
        "[pod/cartpole-dqn-1/di-container] [2026-11-22 23:40:01] INFO evaluator: episode 3 done\n",
        "dihera-stop-value-reached return=196.0 iter=900\n",
        "dihera-evaluation is not a line of the contract\n",
    ]
    assert list(shown(lines)) == [lines[0].rstrip(), lines[2].rstrip()]
    assert SHOWN.match("dihera-learner-seen role=collector node=2 incarnation=learner-0-7-1764190000123 waited=0.250")


def test_the_evaluation_step_takes_the_stored_key_and_runs_where_the_job_ran() -> None:
    local = evaluation_workflow("ns", "ns/j/p/policy.tgz", "dihera.local/di-engine:0.5.3", True, "executor")
    (template,) = local["spec"]["templates"]
    assert local["metadata"]["namespace"] == "ns" and local["spec"]["serviceAccountName"] == "executor"
    assert local["spec"]["arguments"]["parameters"][0] == {"name": "key", "value": "ns/j/p/policy.tgz"}
    assert template["inputs"]["artifacts"][0]["s3"] == {"key": "{{inputs.parameters.key}}"}
    assert template["container"]["image"] == "dihera.local/di-engine:0.5.3"
    assert template["container"]["imagePullPolicy"] == "Never" and template["nodeSelector"] == dict(
        [realnode.NODE_LABEL]
    )
    away = evaluation_workflow("ns", "k", None, False)
    (template,) = away["spec"]["templates"]
    assert "nodeSelector" not in template and "tolerations" not in template and "serviceAccountName" not in away["spec"]
    assert template["container"]["image"] == "dihera/di-engine:0.5.3"  # the file's own
    line = "dihera-evaluated file=/tmp/policy episodes=3 mean=200.000 min=200.000 params=1690322"
    found = EVALUATED.search(f"noise\n{line}\n")
    assert found is not None and found.group(3) == "200.000" and found.group(5) == "1690322"


def test_the_demo_prints_the_return_and_env_steps_per_second_as_they_change(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """status.training, read as the job trains: a line per change (none while nothing is reported), the
    return and env steps/s first; the demo ends with the learning curve's URL."""
    reads = [
        {},
        {"iteration": 40, "envStepsPerSecond": 180.25},
        {"iteration": 40, "envStepsPerSecond": 180.25},
        {"iteration": 300, "envStepsPerSecond": 402.0, "dataWaitFraction": 0.125,
         "evaluation": {"value": 57.3, "best": 57.3, "bestIteration": 300}},
        {"iteration": 900, "envStepsPerSecond": 410.0,
         "evaluation": {"value": 196.0, "best": 196.0, "bestIteration": 900}},
    ]  # fmt: skip
    done = threading.Event()

    def kubectl(argv: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        assert argv[-4:] == ["dijob", "cartpole-dqn", "-o", "jsonpath={.status.training}"]
        body = reads.pop(0) if reads else None
        if not reads:
            done.set()
        return subprocess.CompletedProcess(argv, 0, json.dumps(body) if body else "", "")

    monkeypatch.setattr(demo, "TRAINING_POLL", 0.0)
    monkeypatch.setattr(demo.subprocess, "run", kubectl)
    demo.follow_training("kubeconfig", "dihera-demo", "cartpole-dqn", done)
    assert capsys.readouterr().err.splitlines() == [
        "==> training: env_steps/s=180.2 iter=40",
        "==> training: return=57.3 (best 57.3 at iter 300) env_steps/s=402.0 iter=300 data_wait=0.12",
        "==> training: return=196.0 (best 196.0 at iter 900) env_steps/s=410.0 iter=900",
    ]
    assert training_line({"nonFinite": ["loss"]}) == "training: not finite: loss"
    assert training_line(None) is None
    assert curve_url("https://127.0.0.1:21081", "dihera-demo", "cartpole-dqn") == (
        "https://127.0.0.1:21081/ui/namespaces/dihera-demo/dijobs/cartpole-dqn/curve.svg"
    )
    assert SHOWN.match("dihera-metrics-failed error=HTTPError detail=HTTP_Error_403:_Forbidden")
    assert SHOWN.match("dihera-figures-failed error=HTTPError detail=HTTP_Error_403:_Forbidden")
