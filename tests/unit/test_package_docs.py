"""Every package's docstring is its map: it names each of its modules, and each module it names exists
(the first file a newcomer opens must be true to the tree)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "dihera"
PACKAGES = sorted(p.parent for p in PACKAGE.rglob("__init__.py"))
#: ``name`` in a docstring's list: a module's name is a lowercase identifier.
NAMED = re.compile(r"``([a-z_][a-z0-9_]*)``")
#: :mod:`dihera.x.y` or :mod:`~dihera.x.y`
MOD = re.compile(r":mod:`~?(dihera(?:\.[a-z_][a-z0-9_]*)+)`")


def modules(package: Path) -> set[str]:
    """The package's modules and subpackages."""
    found = {p.stem for p in package.glob("*.py") if not p.stem.startswith("__")}
    return found | {p.name for p in package.iterdir() if (p / "__init__.py").exists()}


def docstring(package: Path) -> str:
    return ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""


def dotted(package: Path) -> str:
    return ".".join(package.relative_to(PACKAGE.parent).parts)


def mentioned(package: Path) -> set[str]:
    """The modules of ``package`` its docstring lists: every ``name`` of a bullet that starts with one
    (``- ``name``: ...``), and every :mod:`dihera.<package>.name`."""
    doc, prefix = docstring(package), dotted(package) + "."
    listed = {name for line in doc.splitlines() if line.lstrip().startswith("- ``") for name in NAMED.findall(line)}
    listed |= {m[len(prefix) :].split(".")[0] for m in MOD.findall(doc) if m.startswith(prefix)}
    return listed


@pytest.mark.parametrize("package", PACKAGES, ids=dotted)
def test_the_package_docstring_names_every_module(package: Path) -> None:
    doc = docstring(package)
    missing = sorted(m for m in modules(package) if f"``{m}``" not in doc and m not in mentioned(package))
    assert not missing, f"{dotted(package)}'s docstring does not name: {', '.join(missing)}"


@pytest.mark.parametrize("package", PACKAGES, ids=dotted)
def test_every_module_a_package_docstring_lists_exists(package: Path) -> None:
    absent = sorted(mentioned(package) - modules(package))
    assert not absent, f"{dotted(package)}'s docstring lists modules that do not exist: {', '.join(absent)}"


def test_a_module_named_in_a_docstring_anywhere_exists() -> None:
    """:mod:`dihera...` references in every module's docstring point at modules that exist."""
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        for ref in MOD.findall(doc):
            parts = ref.split(".")
            base = PACKAGE.parent.joinpath(*parts)
            if not (base.with_suffix(".py").exists() or (base / "__init__.py").exists()):
                wrong.append(f"{path.relative_to(PACKAGE.parent)}: {ref}")
    assert not wrong, "docstrings name modules that do not exist:\n" + "\n".join(wrong)
