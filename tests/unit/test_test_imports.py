"""No test module is imported by another module: fixtures live in conftest.py, helpers in modules named for
what they hold (tests/builders/, tests/unit/observed_job.py, tests/integration/jobs.py...).

A test module that others import runs its fixtures once per importer (pytest registers them again in each),
hides where a helper lives and makes a test file hard to move or delete. Every ``import``, ``from ... import``
(relative ones resolved) and ``importlib.import_module("...")`` in tests/ and bench/ is checked.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCANNED = ("tests", "bench")


def _is_test_module(module: str) -> bool:
    """``tests.<...>.test_<name>``, or ``test_<name>`` alone (a sibling, importable by its bare name where
    the folder has no ``__init__.py``): a module pytest collects tests from."""
    parts = module.split(".")
    return parts[-1].startswith("test_") and (len(parts) == 1 or parts[0] == "tests")


def _package(path: Path, root: Path) -> list[str]:
    """The dotted package of a file under ``root`` (``tests/unit/x.py`` -> ``["tests", "unit"]``)."""
    return list(path.relative_to(root).parent.parts)


def imported_modules(source: str, package: list[str]) -> Iterator[tuple[int, str]]:
    """(line, module) of every module ``source`` imports, relative imports resolved against ``package``; for
    ``from pkg import name`` both ``pkg`` and ``pkg.name`` (the name may be a module)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            yield node.lineno, module
            for alias in node.names:
                yield node.lineno, f"{module}.{alias.name}"
        elif (
            isinstance(node, ast.Call)
            and (
                (isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
                or (isinstance(node.func, ast.Name) and node.func.id in ("import_module", "__import__"))
            )
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            yield node.lineno, node.args[0].value


def imports_of_test_modules(root: Path = REPO) -> list[str]:
    """``path:line imports module`` for every import of a test module under ``root``'s tests/ and bench/."""
    found = []
    for folder in SCANNED:
        for path in sorted((root / folder).rglob("*.py")):
            for line, module in imported_modules(path.read_text(encoding="utf-8"), _package(path, root)):
                if _is_test_module(module):
                    found.append(f"{path.relative_to(root)}:{line} imports {module}")
    return found


def test_no_test_module_is_imported_by_another_module() -> None:
    found = imports_of_test_modules()
    assert not found, (
        "test modules imported by other modules (move fixtures to conftest.py, helpers to a helper module):\n"
        + "\n".join(found)
    )


#: ``{T}`` stands for ``test_`` (so that a grep of the tree for imports of test modules finds none here)
@pytest.mark.parametrize(
    ("path", "source", "module"),
    [
        ("tests/unit/a.py", "from tests.unit.{T}x import helper\n", "tests.unit.{T}x"),
        ("tests/unit/a.py", "from .{T}x import helper\n", "tests.unit.{T}x"),
        ("tests/unit/a.py", "from ..integration.{T}y import fixture\n", "tests.integration.{T}y"),
        ("tests/unit/a.py", "from tests.unit import {T}x\n", "tests.unit.{T}x"),
        ("tests/integration/a.py", "import tests.integration.{T}y as y\n", "tests.integration.{T}y"),
        ("tests/integration/a.py", "from {T}y import fixture\n", "{T}y"),
        ("bench/b.py", "def f():\n    from tests.chart.{T}z import g\n", "tests.chart.{T}z"),
        ("bench/b.py", "import importlib\nm = importlib.import_module('tests.unit.{T}x')\n", "tests.unit.{T}x"),
    ],
    ids=["from-module", "relative", "relative-parent", "from-package", "import-as", "bare", "in-function", "importlib"],
)
def test_the_check_finds_every_form_of_import(tmp_path: Path, path: str, source: str, module: str) -> None:
    (tmp_path / path).parent.mkdir(parents=True)
    (tmp_path / path).write_text(source.format(T="test_"), encoding="utf-8")
    (tmp_path / "tests").mkdir(exist_ok=True)
    (tmp_path / "bench").mkdir(exist_ok=True)
    assert [f.split(" imports ")[1] for f in imports_of_test_modules(tmp_path)] == [module.format(T="test_")]


def test_helper_modules_and_the_standard_library_are_not_test_modules(tmp_path: Path) -> None:
    (tmp_path / "tests" / "unit").mkdir(parents=True)
    (tmp_path / "bench").mkdir()
    source = "import unittest\nfrom tests.builders import PodBuilder\nfrom tests.unit import observed_job\n"
    (tmp_path / "tests" / "unit" / "test_a.py").write_text(source, encoding="utf-8")
    assert imports_of_test_modules(tmp_path) == []
