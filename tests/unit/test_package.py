"""`import dihera`: cheap (public names load on first use) and the same public API as eager imports."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import dihera

ROOT = Path(__file__).resolve().parents[2]


def test_importing_dihera_loads_none_of_its_modules() -> None:
    code = "import sys, dihera; print(sorted(m for m in sys.modules if m.startswith('dihera')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "['dihera']"


def test_every_public_name_is_the_object_of_its_module() -> None:
    from dihera.errors import InvalidJobError
    from dihera.membership import plan_membership
    from dihera.model import DIJob
    from dihera.render import RenderSettings, render
    from dihera.validation import load_job

    expected = {"InvalidJobError": InvalidJobError, "plan_membership": plan_membership, "DIJob": DIJob,
                "RenderSettings": RenderSettings, "render": render, "load_job": load_job}  # fmt: skip
    assert {name: getattr(dihera, name) for name in expected} == expected
    assert all(hasattr(dihera, name) for name in dihera.__all__)


def test_render_stays_the_function_after_its_subpackage_is_imported() -> None:
    """Loading `dihera.render` (the subpackage) binds it on the package; the function must win, in a fresh process
    where the subpackage is first loaded after `import dihera`."""
    code = (
        "import dihera, dihera.render.peer_wait\n"
        "from dihera import render\n"
        "print(callable(render), callable(dihera.render), dihera.render is render)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.split() == ["True", "True", "True"]


def test_an_unknown_name_raises_attribute_error() -> None:
    with pytest.raises(AttributeError, match="'rendr'"):
        dihera.rendr  # type: ignore[attr-defined]  # noqa: B018
