"""README.md's "In Python" block is workflows/python/cartpole_dqn_stock.py between its README markers, and
runs as shown: DI-engine's stock distributed DQN as a DIJob that validates and renders."""

from __future__ import annotations

import contextlib
import io
import re
import runpy
from pathlib import Path
from typing import Any

import yaml

from dihera import load_job, render

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
EXAMPLE = ROOT / "workflows" / "python" / "cartpole_dqn_stock.py"
BEGIN, END = '# README.md "In Python" begins\n', '# README.md "In Python" ends\n'


def readme_block() -> str:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("In Python:") :]
    match = re.search(r"```python\n(.*?)```\n", section, re.S)
    assert match, "README.md has no ```python block after 'In Python:'"
    return match.group(1)


def file_slice() -> str:
    text = EXAMPLE.read_text(encoding="utf-8")
    assert text.count(BEGIN) == 1 and text.count(END) == 1, "one pair of README markers"
    return text.split(BEGIN, 1)[1].split(END, 1)[0]


def test_readme_block_is_the_files_slice() -> None:
    assert readme_block() == file_slice(), "README.md's 'In Python' block drifted from cartpole_dqn_stock.py"


def test_readme_block_runs_as_shown_and_prints_what_the_cluster_needs() -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(readme_block(), "README.md", "exec"), {"__name__": "__main__"})
    kinds = [d["kind"] for d in yaml.safe_load_all(out.getvalue()) if d]
    assert kinds == ["ConfigMap", "Service", "Workflow"]


def _build(**kwargs: str) -> Any:
    return runpy.run_path(str(EXAMPLE))["build"](**kwargs)


def test_the_job_is_ding_example_dqn_in_mesh_with_node_id_roles() -> None:
    job = _build(image="dihera.local/di-engine:0.5.3", namespace="rl")
    manifest = job.to_manifest()
    assert load_job(manifest) == job  # validates
    tasks = manifest["spec"]["tasks"]
    assert [(t["type"], t["replicas"]) for t in tasks] == [("learner", 1), ("evaluator", 1), ("collector", 2)]
    (container,) = {yaml.safe_dump(t["template"]["spec"]["containers"]) for t in tasks}  # the same in every task
    (c,) = yaml.safe_load(container)
    assert c["image"] == "dihera.local/di-engine:0.5.3" and c["command"] == ["ditask"]
    flags = dict(zip(c["args"][::2], c["args"][1::2], strict=True))
    assert flags == {"--platform": "k8s", "--topology": "mesh", "--main": "ding.example.dqn.main", "--ports": "22270"}
    assert {"name": "OMP_NUM_THREADS", "value": "1"} in c["env"]
    assert c["workingDir"] == "/workspace" and c["volumeMounts"] == [{"name": "workdir", "mountPath": "/workspace"}]
    assert manifest["spec"]["volumes"] == [{"name": "workdir", "emptyDir": {"sizeLimit": "256Mi"}}]
    assert manifest["metadata"]["namespace"] == "rl"


def test_the_job_renders_with_ranks_in_spec_order() -> None:
    rendered = render(_build())
    nodes = rendered.configmap["data"]["DI_NODES"].split(",")
    assert [n.split(".")[0] for n in nodes] == [
        "cartpole-dqn-stock-learner-0",  # rank 0: DI-engine's node 0, the learner
        "cartpole-dqn-stock-evaluator-0",  # rank 1: the evaluator
        "cartpole-dqn-stock-collector-0",
        "cartpole-dqn-stock-collector-1",
    ]
    assert [o["kind"] for o in rendered.objects()] == ["ConfigMap", "Service", "Workflow"]
