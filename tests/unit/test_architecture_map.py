"""docs/architecture.md is the map a newcomer reads first: every file and symbol it names must exist.

The map's lists have one entry per line, ``- `path`: `symbol`, `Class.method` — what happens there`
(symbols optional). An entry's file must exist and each of its symbols be defined in it: for Python a
top-level ``def``, ``class`` or assignment, or a method or class attribute ``Class.name`` (read with
:mod:`ast`, nothing imported); for a chart template a ``define``; for any other file the text itself.
Each question's stated count ("**Files on the path: N**") must be its list's length, and every other
file path the page names in backticks must exist. The "Floors" table must name real modules, and for
``dihera.controller`` and ``dihera.controller.decide`` exactly the modules of the ``.importlinter``
contract that holds those floors.
"""

from __future__ import annotations

import ast
import configparser
import functools
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
QUESTIONS = "Eight questions, and the files that answer them"

#: ``- `path`: `a`, `B.c` — text`` or ``- `path` — text``
ENTRY = re.compile(r"^- `(?P<path>[^`]+)`(?::\s*(?P<symbols>[^—]*?))?\s+—\s")
TICKED = re.compile(r"`([^`]+)`")
COUNT = re.compile(r"\*\*Files on the path: (\d+)")
#: a file or folder the page names: ``a/b.py``, ``x/_rules.tpl``, ``dihera/kube/watch/``
PATHLIKE = re.compile(r"^[\w.-]+(/[\w.-]+)*(/|\.(py|tpl|yaml|json|md|toml))$")
#: where the page's short paths (``decide/phase.py``, ``kube/jobs.py``) are relative to
BASES = (ROOT, ROOT / "dihera", ROOT / "dihera" / "controller")


@dataclass(frozen=True)
class Entry:
    section: str
    line: int
    path: str
    symbols: tuple[str, ...]


def sections(text: str) -> dict[str, str]:
    """Each ``##`` and ``###`` heading's text, up to the next heading of either level."""
    out: dict[str, str] = {}
    name, lines = "", list[str]()
    for line in text.splitlines():
        if line.startswith("## ") or line.startswith("### "):
            out[name] = "\n".join(lines)
            name, lines = line.lstrip("#").strip(), []
        else:
            lines.append(line)
    out[name] = "\n".join(lines)
    return out


def entries(text: str, section: str = "") -> list[Entry]:
    """The list entries of ``text`` that name a file."""
    found = []
    for i, line in enumerate(text.splitlines(), 1):
        m = ENTRY.match(line)
        if m:
            symbols = tuple(TICKED.findall(m["symbols"] or ""))
            found.append(Entry(section, i, m["path"], symbols))
    return found


@functools.cache
def _python_names(path: Path) -> frozenset[str]:
    """Top-level names of a module, and ``Class.name`` for what its classes define."""
    names: set[str] = set()

    def targets(node: ast.stmt) -> list[str]:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return [node.name]
        if isinstance(node, ast.Assign):
            return [t.id for t in node.targets if isinstance(t, ast.Name)]
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            return [node.target.id]
        return []

    for node in ast.parse(path.read_text()).body:
        names.update(targets(node))
        if isinstance(node, ast.ClassDef):
            names.update(f"{node.name}.{n}" for inner in node.body for n in targets(inner))
    return frozenset(names)


def defines(path: Path, symbol: str) -> bool:
    """Whether ``path`` defines ``symbol`` (the module docstring says how, by kind of file)."""
    if path.suffix == ".py":
        return symbol in _python_names(path)
    text = path.read_text()
    if path.suffix == ".tpl":
        return f'define "{symbol}"' in text
    return symbol in text


def resolve(token: str) -> Path | None:
    """The file or folder a path the page names stands for: from the repository's root, or short (from
    ``dihera/`` or ``dihera/controller/``), or a bare file name found in the package or the chart."""
    for base in BASES:
        if (base / token).exists():
            return base / token
    if "/" not in token:
        for tree in (ROOT / "dihera", ROOT / "charts"):
            found = sorted(tree.rglob(token))
            if found:
                return found[0]
    return None


def problems(entry: Entry) -> list[str]:
    """What is wrong with one entry: its file missing, or a symbol not defined in it."""
    where = f"{entry.section!r}, list line {entry.line}: `{entry.path}`"
    path = ROOT / entry.path
    if not path.is_file():
        return [f"{where} is not a file of the repository"]
    return [f"{where} does not define `{s}`" for s in entry.symbols if not defines(path, s)]


DOC_SECTIONS = sections(DOC.read_text())
_NAMES = list(DOC_SECTIONS)
#: the ``###`` questions, between the questions' heading and the next ``##``
QUESTION_NAMES = _NAMES[_NAMES.index(QUESTIONS) + 1 : _NAMES.index("Lifecycle features")]
ALL_ENTRIES = [e for name, body in DOC_SECTIONS.items() for e in entries(body, name)]


def test_the_page_has_its_questions_and_lists() -> None:
    assert len(QUESTION_NAMES) >= 6, f"docs/architecture.md: questions found: {QUESTION_NAMES}"
    assert len(ALL_ENTRIES) >= 60, f"docs/architecture.md: only {len(ALL_ENTRIES)} entries parsed"


@pytest.mark.parametrize("question", QUESTION_NAMES)
def test_a_question_lists_its_path_and_counts_it_truly(question: str) -> None:
    body = DOC_SECTIONS[question]
    listed = entries(body, question)
    assert listed, f"{question!r}: no list of files (`- `path`: `symbol` — what happens there`)"
    paths = [e.path for e in listed]
    assert len(set(paths)) == len(paths), f"{question!r}: a file is listed twice"
    stated = COUNT.search(body)
    assert stated, f"{question!r}: no '**Files on the path: N**'"
    assert int(stated[1]) == len(paths), f"{question!r}: says {stated[1]} files, lists {len(paths)}"


@pytest.mark.parametrize("entry", ALL_ENTRIES, ids=lambda e: f"{e.path}")
def test_every_listed_file_and_symbol_exists(entry: Entry) -> None:
    assert not problems(entry)


def test_every_path_the_page_names_exists() -> None:
    named = {t for t in TICKED.findall(DOC.read_text()) if PATHLIKE.match(t)}
    assert len(named) > 50
    missing = sorted(t for t in named if resolve(t) is None)
    assert not missing, f"docs/architecture.md names paths that do not exist: {', '.join(missing)}"


def _floors() -> dict[str, list[str]]:
    """The Floors table: package -> the names in its row, in order."""
    rows: dict[str, list[str]] = {}
    for line in DOC_SECTIONS["Floors"].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("| `") else []
        if cells:
            rows[TICKED.findall(cells[0])[0]] = TICKED.findall(line.split("|", 2)[2])
    return rows


def _layers(container: str) -> set[str]:
    """The modules of the ``layers`` contract over ``container`` in ``.importlinter``."""
    config = configparser.ConfigParser()
    config.read(ROOT / ".importlinter")
    for name in config.sections():
        if config[name].get("type") == "layers" and config[name].get("containers", "").strip() == container:
            layers = config[name]["layers"]
            return {m.strip() for m in re.split(r"[|:\n]", layers) if m.strip()}
    raise AssertionError(f".importlinter has no layers contract over {container}")


@pytest.mark.parametrize("package", ["dihera", "dihera.controller", "dihera.controller.decide"])
def test_the_floors_table_names_real_modules_and_their_symbols(package: str) -> None:
    row = _floors().get(package)
    assert row, f"Floors: no row for {package}"
    folder = ROOT.joinpath(*package.split("."))
    wrong, module = [], None
    for name in row:
        if (folder / f"{name}.py").is_file() or (folder / name / "__init__.py").is_file():
            module = folder / f"{name}.py"
        elif module is None or not module.is_file() or not defines(module, name):
            wrong.append(name)
    assert not wrong, f"Floors, {package}: neither a module nor defined by the module before it: {wrong}"


@pytest.mark.parametrize("package", ["dihera.controller", "dihera.controller.decide"])
def test_the_floors_table_is_the_import_linter_contract(package: str) -> None:
    folder = ROOT.joinpath(*package.split("."))
    named = {n for n in _floors()[package] if (folder / f"{n}.py").is_file() or (folder / n).is_dir()}
    assert named == _layers(package), f"Floors, {package}: the table and .importlinter differ"


def test_the_typed_views_name_what_their_files_define() -> None:
    """The "Typed views, one of each" section: each backticked name after a file's path is defined in that file."""
    text, wrong = DOC_SECTIONS["Typed views, one of each"], []
    path: Path | None = None
    for token in TICKED.findall(text):
        if PATHLIKE.match(token):
            path = resolve(token)
            assert path is not None, f"Typed views: {token} does not exist"
        elif path is not None and path.suffix == ".py" and not defines(path, token):
            wrong.append(f"{token} ({path.relative_to(ROOT)})")
    assert not wrong, f"Typed views name what is not defined: {wrong}"


def test_the_checks_catch_a_missing_file_or_symbol() -> None:
    """The checks above can fail: a made-up entry is caught."""
    page = (
        "- `dihera/render/env.py`: `di_env`, `no_such_function` — x\n"
        "- `dihera/no_such_module.py`: `x` — y\n"
        "- `dihera/controller/apply.py`: `Applier.status`, `Applier.no_such_method` — z\n"
        "- `charts/dihera/templates/controller/_rules.tpl`: `dihera.controller.noSuchRules` — w\n"
    )
    found = [p for e in entries(page, "test") for p in problems(e)]
    assert len(found) == 4, found
    assert "no_such_function" in found[0] and "not a file" in found[1] and "no_such_method" in found[2]
    assert resolve("decide/phase.py") is not None and resolve("decide/no_such.py") is None
