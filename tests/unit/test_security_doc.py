"""docs/security.md is a threat model whose every line names the test that proves it: each test it names
exists (a renamed or deleted test fails here, so the page cannot go on citing a proof that is gone)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "security.md"


def functions_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}


def locate(name: str) -> Path | None:
    """A cited file: a path from the repo, or a bare test module's name found once under tests/."""
    if "/" in name:
        return REPO / name if (REPO / name).is_file() else None
    found = sorted((REPO / "tests").rglob(name))
    return found[0] if len(found) == 1 else None


def citations(text: str) -> list[tuple[str, str | None]]:
    """Every (module, test) the page names; a bare ``::name`` takes the module named last before it."""
    cited: list[tuple[str, str | None]] = []
    for line in text.splitlines():
        module: str | None = None
        for match in re.finditer(r"`([^`]+)`", line):
            ref = match.group(1)
            head, _, test = ref.partition("::")
            if head.endswith(".py") and Path(head).name.startswith(("test_", "bench_")):
                module = head
                cited.append((head, test or None))
            elif ref.startswith("::") and module:
                cited.append((module, test))
    return cited


def test_the_threat_model_cites_tests() -> None:
    assert len(citations(PAGE.read_text())) >= 25


def test_every_test_the_threat_model_cites_exists() -> None:
    missing = []
    for module, test in citations(PAGE.read_text()):
        if module.startswith("bench/") or Path(module).name.startswith("bench_"):
            continue
        path = locate(module)
        if path is None:
            missing.append(f"{module}: no such test module (or its name is not unique under tests/)")
        elif test is not None and test not in functions_of(path):
            missing.append(f"{module}::{test}: no such test")
    assert not missing, "docs/security.md cites:\n" + "\n".join(missing)
