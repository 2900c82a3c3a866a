"""A plain `pip install dihera` (no extras) runs validate, render and crd; the operator commands say what is missing.

Builds the wheel, installs it into a fresh venv with its base dependencies only (from the package
index, as a user would), and runs the commands there. Marked `packaging`: it needs the index and
about a minute.
"""

from __future__ import annotations

import subprocess
import sys
import venv
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.packaging

ROOT = Path(__file__).resolve().parents[2]
OPERATOR_ONLY = ("fastapi", "kopf", "uvicorn", "prometheus_client")


@pytest.fixture(scope="module")
def plain_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A venv holding dihera's wheel and its base dependencies only; its bin/ directory."""
    base = tmp_path_factory.mktemp("plain")
    wheels = base / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(ROOT)],
                   check=True)
    (wheel,) = wheels.glob("dihera-*.whl")
    venv.create(base / "venv", with_pip=True)
    bin_dir = base / "venv" / "bin"
    subprocess.run([str(bin_dir / "python"), "-m", "pip", "install", "-q", str(wheel)], check=True)
    yield bin_dir


def run(bin_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(bin_dir / "dihera"), *args], capture_output=True, text=True, cwd=ROOT, check=False)


def test_no_operator_dependency_is_installed(plain_env: Path) -> None:
    code = f"import importlib.util as u; print([m for m in {OPERATOR_ONLY!r} if u.find_spec(m)])"
    out = subprocess.run([str(plain_env / "python"), "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("example", ["workflows/serial.yaml", "tests/fixtures/companions/atari-dqn-config.yaml"])
def test_validate_render_and_crd_work(plain_env: Path, example: str) -> None:
    validated = run(plain_env, "validate", example)
    assert validated.returncode == 0, validated.stderr
    rendered = run(plain_env, "render", example)
    assert rendered.returncode == 0, rendered.stderr
    kinds = [d["kind"] for d in yaml.safe_load_all(rendered.stdout)]
    assert kinds[-3:] == ["ConfigMap", "Service", "Workflow"]
    crd = run(plain_env, "crd")
    assert crd.returncode == 0 and yaml.safe_load(crd.stdout)["kind"] == "CustomResourceDefinition"


@pytest.mark.parametrize("command", [["controller", "--standalone"], ["server", "--no-auth"]])
def test_operator_commands_name_the_extra(plain_env: Path, command: list[str]) -> None:
    result = run(plain_env, *command)
    assert result.returncode == 2
    assert "pip install 'dihera[operator]'" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
