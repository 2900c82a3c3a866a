"""The dihera command: exit codes, one line per problem, YAML stream output, stdin."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from dihera.cli import main

from .builders import job, task

ROOT = Path(__file__).resolve().parents[2]


def write(tmp_path: Path, obj: object, name: str = "job.yaml") -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(obj))
    return str(path)


def test_validate_valid_files(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", *map(str, sorted((ROOT / "workflows").glob("*.yaml")))]) == 0
    assert capsys.readouterr().out == ""


def test_validate_prints_one_line_per_problem(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, job(task("collector"), task("collector", name="c"), task("none")))
    assert main(["validate", "-q", path]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        f"{path} (job): spec.tasks[0].type: 'collector' is the type of 2 tasks; "
        "at most one task of each type learner, collector and evaluator",
        f"{path} (job): spec.tasks[1].type: 'collector' is the type of 2 tasks; "
        "at most one task of each type learner, collector and evaluator",
        f"{path} (job): spec.tasks[2].name: is required for a task of type none",
    ]


def test_validate_unreadable_and_broken_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("spec: [\n")
    assert main(["validate", str(tmp_path / "missing.yaml"), str(broken)]) == 1
    err = capsys.readouterr().err
    assert "missing.yaml: cannot read" in err and "broken.yaml: not valid YAML" in err


def test_render_writes_a_yaml_stream(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, job(task("learner"), task("collector", replicas=2)))
    assert main(["render", path, "--namespace", "rl", "--server-url", "http://s:1"]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    assert [d["kind"] for d in docs] == ["ConfigMap", "Service", "Workflow"]
    assert all(d["metadata"]["namespace"] == "rl" for d in docs)
    assert "http://s:1" in yaml.safe_dump(docs[2])


def test_render_invalid_job_exits_1_without_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, job(task("none")))
    assert main(["render", path]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "spec.tasks[0].name: is required for a task of type none" in captured.err
    assert "Traceback" not in captured.err


def test_render_reads_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(yaml.safe_dump(job(task("learner")))))
    assert main(["render", "-"]) == 0
    assert "kind: Workflow" in capsys.readouterr().out


def test_python_m_dihera_and_crd() -> None:
    out = subprocess.run([sys.executable, "-m", "dihera", "crd"], check=True, capture_output=True, text=True).stdout
    crd = yaml.safe_load(out)
    assert crd["kind"] == "CustomResourceDefinition"
    assert crd["metadata"]["name"] == "dijobs.diengine.opendilab.org"


def test_version_is_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    project = next(line for line in (ROOT / "pyproject.toml").read_text().splitlines() if line.startswith("version"))
    assert capsys.readouterr().out == f"dihera {project.split('=')[1].strip().strip(chr(34))}\n"
