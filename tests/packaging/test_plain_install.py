"""A plain `pip install dihera` (no extras) runs validate, render, crd and convert; operator commands name the extra.

Builds the wheel (no build isolation: hatchling from the dev venv), installs it with pip into a fresh
venv from a local wheelhouse of the base dependencies only (``$DIHERA_CACHE/wheelhouse``, filled by
``pip download`` from the package index the first time and whenever the dependencies change; offline
after that), and runs the commands there. Marked `packaging`; warm, it takes about 15 seconds.
"""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.packaging

ROOT = Path(__file__).resolve().parents[2]
OPERATOR_ONLY = ("fastapi", "orjson", "uvicorn", "prometheus_client", "starlette", "uvloop", "httptools")
JOB = ROOT / "workflows" / "serial.yaml"
OLD_JOB = ROOT / "tests" / "unit" / "fixtures" / "convert" / "v1alpha2-shape.yaml"


def wheelhouse() -> Path:
    cache = Path(os.environ.get("DIHERA_CACHE") or Path.home() / ".cache" / "dihera")
    return cache / "wheelhouse"


def pip(*args: str) -> subprocess.CompletedProcess[str]:
    """The dev venv's pip (``--python`` points it at another venv)."""
    return subprocess.run([sys.executable, "-m", "pip", "-q", "--disable-pip-version-check", *args],
                          capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def plain_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A venv holding dihera's wheel and its base dependencies only; its bin/ directory."""
    base = tmp_path_factory.mktemp("plain")
    built = pip("wheel", "--no-deps", "--no-build-isolation", "-w", str(base / "dist"), str(ROOT))
    assert built.returncode == 0, built.stderr
    (wheel,) = (base / "dist").glob("dihera-*.whl")
    venv.create(base / "venv", with_pip=False)
    python = str(base / "venv" / "bin" / "python")
    house = wheelhouse()
    # --no-compile: only what a command imports is byte-compiled, when it runs (saves most of the install)
    install = ("--python", python, "install", "--no-compile", "--no-index", "--find-links", str(house), str(wheel))
    if pip(*install).returncode != 0:  # first run, or a dependency changed: fetch what is missing
        fetched = pip("download", "--only-binary", ":all:", "-d", str(house), str(wheel))
        assert fetched.returncode == 0, fetched.stderr
        for stale in house.glob("dihera-*.whl"):  # the wheel under test is always the one just built
            stale.unlink()
        installed = pip(*install)
        assert installed.returncode == 0, installed.stderr
    yield base / "venv" / "bin"


def run(bin_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run([str(bin_dir / "dihera"), *args], capture_output=True, text=True, check=False,
                          cwd=bin_dir, env=env)


def test_no_operator_dependency_is_installed(plain_env: Path) -> None:
    code = f"import importlib.util as u; print([m for m in {OPERATOR_ONLY!r} if u.find_spec(m)])"
    out = subprocess.run([str(plain_env / "python"), "-c", code], capture_output=True, text=True, check=True,
                         cwd=plain_env)
    assert out.stdout.strip() == "[]"


def test_validate_render_crd_and_convert_work(plain_env: Path) -> None:
    validated = run(plain_env, "validate", str(JOB))
    assert validated.returncode == 0 and "valid" in validated.stderr, validated.stderr
    rendered = run(plain_env, "render", str(JOB))
    assert rendered.returncode == 0, rendered.stderr
    assert [d["kind"] for d in yaml.safe_load_all(rendered.stdout)] == ["ConfigMap", "Service", "Workflow"]
    crd = run(plain_env, "crd")
    assert crd.returncode == 0 and yaml.safe_load(crd.stdout)["kind"] == "CustomResourceDefinition", crd.stderr
    converted = run(plain_env, "convert", str(OLD_JOB))
    assert converted.returncode == 0, converted.stderr
    (job,) = yaml.safe_load_all(converted.stdout)
    assert job["apiVersion"] == "diengine.opendilab.org/v2alpha1" and job["spec"]["tasks"][0]["name"] == "worker"


@pytest.mark.parametrize("command", [["controller", "--standalone"], ["server", "--no-auth", "--plain-http"]])
def test_operator_commands_name_the_extra(plain_env: Path, command: list[str]) -> None:
    result = run(plain_env, *command)
    assert result.returncode == 2
    assert f"dihera {command[0]} needs the operator extras" in result.stderr, result.stderr
    assert "pip install 'dihera[operator]'" in result.stderr
    assert "Traceback" not in result.stderr
