"""The dihera command: exit codes, one line per problem, YAML stream output, stdin."""

from __future__ import annotations

import argparse
import ast
import io
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from dihera.cli import COMMAND_MODULES, _modules_for, build_parser, main
from tests.builders import job, task
from tests.builders.hostile_yaml import alias_line, nested_aliases

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
    out = capsys.readouterr()
    assert "missing.yaml: cannot read" in out.err
    assert f"{broken}: line 2: not valid YAML" in out.out


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


COMPANIONS = sorted((ROOT / "tests" / "fixtures" / "companions").glob("*.yaml"))
EMPTY_INPUTS = {"empty": "", "comments": "# nothing\n# at all\n", "separator": "---\n", "two": "---\n---\n"}


@pytest.mark.parametrize("command", ["validate", "render", "submit"])
@pytest.mark.parametrize("text", list(EMPTY_INPUTS.values()), ids=list(EMPTY_INPUTS))
def test_empty_input_is_an_error_for_every_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, text: str
) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text(text)
    assert main([command, str(path)]) == 1
    out = capsys.readouterr()
    assert "no YAML document: the input is empty or only comments" in out.out + out.err
    assert out.out.count("---") == 0


@pytest.mark.parametrize("command", ["validate", "render", "submit"])
def test_duplicate_keys_are_errors_naming_key_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    path = tmp_path / "dup.yaml"
    path.write_text(yaml.safe_dump(job(task("learner"))) + "spec:\n  tasks: []\n")
    lines = path.read_text().splitlines()
    first = lines.index("spec:") + 1
    second = lines.index("spec:", first) + 1
    assert main([command, str(path)]) == 1
    out = capsys.readouterr()
    assert f"line {second}: duplicate key 'spec' (first at line {first}); give each key once" in out.out + out.err


@pytest.mark.parametrize("path", COMPANIONS, ids=[p.name for p in COMPANIONS])
def test_companion_objects_are_validated_and_passed_through(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "-q", str(path)]) == 0
    assert capsys.readouterr().out == ""
    assert main(["render", str(path)]) == 0
    rendered = list(yaml.safe_load_all(capsys.readouterr().out))
    given = list(yaml.safe_load_all(path.read_text()))
    others = [d for d in given if d["kind"] != "DIJob"]
    assert rendered[: len(others)] == others  # untouched, first
    assert [d["kind"] for d in rendered[len(others) :]] == ["ConfigMap", "Service", "Workflow"]


@pytest.mark.parametrize(
    ("documents", "expected"),
    [
        pytest.param(
            [{"kind": "ConfigMap", "metadata": {"name": "c"}}],
            "document 2 (line 14): is not a Kubernetes object: apiVersion missing",
            id="no-api-version",
        ),
        pytest.param(
            [{"data": {"a": "b"}}],
            "document 2 (line 14): is not a Kubernetes object: apiVersion and kind missing",
            id="no-api-version-no-kind",
        ),
        pytest.param(
            [["a"]], "document 2 (line 14): must be a Kubernetes object (a mapping), got ['a']", id="not-a-mapping"
        ),
    ],
)
def test_a_document_that_is_no_object_is_named_by_position(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], documents: list[object], expected: str
) -> None:
    path = tmp_path / "multi.yaml"
    path.write_text(yaml.safe_dump_all([job(task("learner")), *documents]))
    assert main(["validate", str(path)]) == 1
    assert f"{path}: {expected}" in capsys.readouterr().out.splitlines()


def test_a_file_without_a_dijob_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "cm.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}))
    assert main(["render", str(path)]) == 1
    out = capsys.readouterr()
    assert "(file): no DIJob (kind: DIJob) among its 1 document(s)" in out.err and out.out == ""


def test_unknown_fields_are_errors_in_every_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, job(task("learner", nodeSelektor={}), backofflimit=1))
    assert main(["validate", "-q", path]) == 1
    assert capsys.readouterr().out.splitlines() == [
        f"{path} (job): spec.backofflimit: unknown field of the DIJob spec; did you mean backoffLimit?",
        f"{path} (job): spec.tasks[0].template.spec.nodeSelektor: unknown field of core/v1 PodSpec; "
        "did you mean nodeSelector?",
    ]
    assert main(["render", path]) == 1
    out = capsys.readouterr()
    assert out.out == "" and "spec.backofflimit: unknown field of the DIJob spec; did you mean backoffLimit?" in out.err


HEAVY = ("fastapi", "orjson", "uvicorn", "kubernetes", "starlette", "httpx", "prometheus_client", "uvloop", "httptools")


@pytest.mark.parametrize(
    ("argv", "forbidden"),
    [
        pytest.param(["validate", "-q", "workflows/atari-dqn.yaml"], (*HEAVY, "hera", "pydantic"), id="validate"),
        pytest.param(["render", "workflows/atari-dqn.yaml"], HEAVY, id="render"),
        pytest.param(["crd"], (*HEAVY, "hera", "pydantic", "jsonschema"), id="crd"),
        pytest.param(["convert", "tests/unit/fixtures/convert/v1alpha2-shape.yaml"], (*HEAVY, "hera", "pydantic"),
                     id="convert"),
        pytest.param(["wait-peers", "--rank", "0", "--nodes", "localhost"],
                     (*HEAVY, "hera", "pydantic", "jsonschema", "yaml"), id="wait-peers"),
    ],
)
def test_commands_import_only_what_they_need(argv: list[str], forbidden: tuple[str, ...]) -> None:
    """A fresh process runs the command, then lists the top-level packages it loaded."""
    code = (
        "import sys, contextlib, io\n"
        "from dihera.cli import main\n"
        f"with contextlib.redirect_stdout(io.StringIO()): code = main({argv!r})\n"
        "print(code, sorted({m.split('.')[0] for m in sys.modules}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout, out.stderr
    code_text, _, loaded = out.stdout.partition(" ")
    assert code_text == "0", out
    assert [m for m in forbidden if f"'{m}'" in loaded] == []


#: What `dihera wait-peers` (every replica's init container) may load of dihera: the wait and nothing else.
PEER_WAIT_MODULES = {"dihera", "dihera.cli", "dihera.cli.peers", "dihera.constants", "dihera.peers"}


def test_wait_peers_loads_only_the_wait_and_the_standard_library() -> None:
    """A fresh process: no other command module, no jsonschema / yaml / attrs (what `import dihera` once cost)."""
    code = (
        "import sys, contextlib, io\n"
        "from dihera.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    code = main(['wait-peers', '--rank', '0', '--nodes', 'localhost'])\n"
        "print(code, sorted(m for m in sys.modules if m.split('.')[0] in ('dihera', 'jsonschema', 'yaml', 'attrs')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    code_text, _, loaded = out.stdout.strip().partition(" ")
    assert code_text == "0", out
    assert set(ast.literal_eval(loaded)) == PEER_WAIT_MODULES


def test_each_command_module_adds_exactly_the_commands_it_is_listed_with() -> None:
    """COMMAND_MODULES maps a command to the one module loaded for it: the map must match `register`."""
    for module, commands in COMMAND_MODULES.items():
        parser = build_parser([module])
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        assert tuple(sub.choices) == commands, module


@pytest.mark.parametrize(
    ("argv", "loaded"),
    [
        pytest.param(["wait-peers", "--rank", "0"], ["dihera.cli.peers"], id="one command"),
        pytest.param(["status", "ns/job"], ["dihera.cli.scale"], id="a module with two commands"),
        pytest.param(["--version"], list(COMMAND_MODULES), id="no command"),
        pytest.param(["wiat-peers"], list(COMMAND_MODULES), id="a typo: every command, for argparse's message"),
    ],
)
def test_a_command_line_loads_the_module_of_its_command(argv: list[str], loaded: list[str]) -> None:
    assert _modules_for(argv) == loaded


def test_operator_command_without_the_extras_names_the_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # importing prometheus_client raises ModuleNotFoundError, as without the extra
    monkeypatch.setitem(sys.modules, "prometheus_client", None)
    for module in ("dihera.controller.run", "dihera.controller.endpoints", "dihera.controller.metrics"):
        monkeypatch.delitem(sys.modules, module, raising=False)  # imported by an earlier test: import them afresh
    assert main(["controller", "--standalone"]) == 2
    assert (
        "dihera controller needs the operator extras (module 'prometheus_client' is missing): "
        "pip install 'dihera[operator]'" in capsys.readouterr().err
    )


def test_version_is_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    project = next(line for line in (ROOT / "pyproject.toml").read_text().splitlines() if line.startswith("version"))
    assert capsys.readouterr().out == f"dihera {project.split('=')[1].strip().strip(chr(34))}\n"


# -- bad input files: every command that reads one names it, exits 1, and never hangs --------------------
_READERS = [["validate"], ["render"], ["submit"], ["convert"]]


@pytest.mark.parametrize("command", _READERS, ids=lambda c: c[0])
def test_a_file_that_is_not_utf8_is_named_with_the_byte(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(yaml.safe_dump(job(task("learner"), name="caf\u00e9"), allow_unicode=True).encode("latin-1"))
    offset = path.read_bytes().index(b"\xe9")
    assert main([*command, str(path)]) == 1
    out = capsys.readouterr()
    assert out.out == ""
    assert f"{path}: not UTF-8 text (byte 0xe9 at offset {offset}, line " in out.err and "save it as UTF-8" in out.err
    assert "Traceback" not in out.err


def test_utf16_is_named_and_stdin_is_read_as_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data = yaml.safe_dump(job(task("learner"))).encode("utf-16")  # what Windows PowerShell's > writes
    stdin = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8")
    monkeypatch.setattr(sys, "stdin", stdin)
    assert main(["validate", "-"]) == 1
    assert capsys.readouterr().err == (
        "<stdin>: not UTF-8 text (byte 0xff at offset 0, line 1) (it starts with UTF-16's byte-order mark); "
        "save it as UTF-8\n"
    )


@pytest.mark.parametrize("command", _READERS, ids=lambda c: c[0])
@pytest.mark.parametrize("levels", [9, 20])
def test_nested_aliases_are_refused_in_well_under_a_second(
    command: list[str], levels: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "lol.yaml"
    path.write_text(nested_aliases(levels))
    start = time.perf_counter()
    code = main([*command, str(path)])
    took = time.perf_counter() - start
    out = capsys.readouterr()
    with capsys.disabled():
        print(f"dihera {command[0]}: nesting {levels} refused in {took:.3f} s")
    assert code == 1 and str(path) in out.out + out.err
    assert f"line {alias_line(6)}: document 1 (line 1): alias *l5 makes the document's aliases add" in out.out + out.err
    assert took < 1.0  # the bar (a few milliseconds here: nothing is expanded)
