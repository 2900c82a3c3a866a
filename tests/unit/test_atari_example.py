"""The Atari example (examples/atari/atari_dqn, workflows/atari-dqn.yaml, ci/images/di-engine-atari) agrees
with itself and with DI-engine 0.5.3, without DI-engine installed (read with ast).

Give an interpreter that has DI-engine 0.5.3 in ``DIHERA_DING_PYTHON`` (e.g. the DI-engine image's
``/opt/ding/bin/python``) and the imports are also checked for real; without one that test is skipped.
"""

from __future__ import annotations

import ast
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
MAIN = ROOT / "examples" / "atari" / "atari_dqn" / "main.py"
DOCKERFILE = ROOT / "ci" / "images" / "di-engine-atari" / "Dockerfile"
WORKFLOW = ROOT / "workflows" / "atari-dqn.yaml"
DING_PYTHON = os.environ.get("DIHERA_DING_PYTHON")

#: What the main module may import from DI-engine 0.5.3 (the wheel ships ding, dizoo; ditk is DI-toolkit):
#: each name read from the installed package (`hasattr(module, name)`, 2026-11-26). The names DI-engine's
#: own dizoo/atari/example/atari_dqn_dist.py imports, context_exchanger and model_exchanger, are not there.
DING_0_5_3: dict[str, set[str]] = {
    "ding.config": {"compile_config"},
    "ding.data": {"DequeBuffer"},
    "ding.envs": {"SubprocessEnvManagerV2"},
    "ding.framework": {"ding_init", "task"},
    "ding.framework.context": {"OnlineRLContext"},
    "ding.framework.middleware": {
        "CkptSaver", "ContextExchanger", "ModelExchanger", "OffPolicyLearner", "StepCollector", "data_pusher",
        "eps_greedy_handler", "interaction_evaluator", "nstep_reward_enhancer", "online_logger",
        "termination_checker",
    },
    "ding.model": {"DQN"},
    "ding.policy": {"DQNPolicy"},
    "ding.utils": {"set_pkg_seed"},
    "ditk": {"logging"},
    "dizoo.atari.config.serial.pong.pong_dqn_config": {"create_config", "main_config"},
    "dizoo.atari.envs.atari_env": {"AtariEnv"},
}


def _imports(path: Path) -> dict[str, set[str]]:
    """``from M import a, b`` of DI-engine's packages, by module."""
    found: dict[str, set[str]] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in ("ding", "dizoo", "ditk"):
            found.setdefault(node.module, set()).update(a.name for a in node.names)
    return found


def test_main_imports_only_what_ding_0_5_3_exports() -> None:
    used = _imports(MAIN)
    unknown = {m: sorted(extra) for m, names in used.items() if (extra := names - DING_0_5_3.get(m, set()))}
    assert not unknown, f"not exported by DI-engine 0.5.3 (as recorded here): {unknown}"
    assert "context_exchanger" not in used.get("ding.framework.middleware", set())


@pytest.mark.skipif(not DING_PYTHON, reason="no DI-engine: set DIHERA_DING_PYTHON to an interpreter that has it")
def test_main_imports_resolve_in_a_real_di_engine() -> None:
    checks = [f"assert hasattr(importlib.import_module({m!r}), {n!r}), {m + '.' + n!r}" for m, names in
              sorted(_imports(MAIN).items()) if not m.startswith("dizoo.atari.envs") for n in sorted(names)]
    # dizoo.atari.envs needs OpenCV (the Atari image has it, the DI-engine image not): found, not imported
    checks.append("assert importlib.util.find_spec('dizoo.atari.envs.atari_env')")
    code = "import importlib, importlib.util\n" + "\n".join(checks)
    done = subprocess.run([str(DING_PYTHON), "-c", code], capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


def test_main_takes_roles_from_node_ids_as_ding_example_dqn_does() -> None:
    source = MAIN.read_text(encoding="utf-8")
    assert "task.router.node_id == 0" in source and "task.router.node_id == 1" in source
    assert "labels" not in source
    names = {n.name for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)}
    assert "main" in names


def _tasks() -> list[dict[str, Any]]:
    tasks: list[dict[str, Any]] = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))["spec"]["tasks"]
    return tasks


def test_workflow_runs_the_main_module_the_image_ships_with_node_id_roles() -> None:
    tasks = _tasks()
    assert [t["type"] for t in tasks] == ["learner", "evaluator", "collector"]  # node ids 0, 1, then collectors
    containers = [c for t in tasks for c in t["template"]["spec"]["containers"]]
    assert {c["image"] for c in containers} == {"dihera/di-engine-atari:0.5.3"}
    (args,) = {tuple(c["args"]) for c in containers}  # the same in every task
    assert [c["command"] for c in containers] == [["ditask"]] * len(containers)
    flags = dict(zip(args[::2], args[1::2], strict=True))
    assert flags == {
        "--platform": "k8s",
        "--topology": "mesh",
        "--package": "/opt/dihera-examples/atari",
        "--main": "atari_dqn.main.main",
        "--ports": "22270",
    }
    package, module = flags["--package"], flags["--main"].rsplit(".", 1)[0]
    copy = f"COPY examples/atari/atari_dqn {package}/{module.split('.')[0]}"
    dockerfile = DOCKERFILE.read_text(encoding="utf-8")
    assert copy in dockerfile
    assert (ROOT / "examples" / "atari" / (module.replace(".", "/") + ".py")) == MAIN
    assert "-t dihera/di-engine-atari:0.5.3 ." in dockerfile
    assert "ARG DI_ENGINE_IMAGE=dihera/di-engine:0.5.3" in dockerfile


def test_workflow_header_says_why_it_does_not_run_here() -> None:
    header = WORKFLOW.read_text(encoding="utf-8").split("apiVersion:", 1)[0]
    for needed in ("ci/images/di-engine-atari/Dockerfile", "ROMs", "licence", "6 CPUs", "GPU", "kwok"):
        assert needed in header, needed
