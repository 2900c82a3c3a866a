"""libyaml reads and writes YAML for the CLI (several times faster); its text must be PyYAML's own.

``dihera render`` writes manifests through libyaml's emitter and reads files through its parser when
PyYAML has it (the PyPI wheels do). Every rendered golden file and every tricky scalar below must come
out byte-identical to PyYAML's pure-Python emitter, and parse problems must name the same lines.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from dihera import documents, manifests
from dihera.errors import InvalidJobError
from dihera.manifests import dump_yaml, load_yaml_stream

from ..golden import RENDERED

pytestmark = pytest.mark.skipif(not yaml.__with_libyaml__, reason="this PyYAML was built without libyaml")


def pure_dump(obj: Any) -> str:
    """PyYAML's own emitter, as the CLI wrote YAML before libyaml."""
    return manifests._dump(obj, manifests._Dumper)


TRICKY: list[Any] = [
    "plain",
    "",
    " leading and trailing ",
    "multi\nline\n",
    "multi\nline no final newline",
    "trailing spaces   \nnext\n",
    "\ttab\n",
    "yes",
    "null",
    "~",
    "0o17",
    "1e3",
    "0x1F",
    "2026-11-25",
    "- dash",
    "# hash",
    "key: value",
    "a" * 5000,
    " ".join(["word"] * 2000),
    "ünïcødé ✓ 模型",
    "emoji 🚀",
    "\u00a0nbsp",
    "quote ' and \" both",
    "back\\slash",
    "\x07bell",
    "{flow}",
    "[list]",
    "@at",
    "`tick",
    "%percent",
    "!bang",
    "*star",
    "&amp",
    "|pipe",
    ">gt",
    "line\r\nwindows\r\n",
    "next line \x85 (libyaml escapes it)",
    "\u2028 line and \u2029 paragraph separators",
    "\ufeffbom",
    "multi\nline with \U0001f680\n",
]

#: Every 13th code point of the first plane, and every 4,099th beyond it (the full sweep, 10 s, found
#: only U+0085 and the characters beyond U+FFFF written differently by libyaml).
CODE_POINTS = [c for c in range(0, 0x10000, 13) if not 0xD800 <= c < 0xE000] + list(range(0x10000, 0x110000, 4099))


@pytest.mark.parametrize("value", TRICKY, ids=range(len(TRICKY)))
def test_each_scalar_is_written_as_pyyaml_writes_it_and_read_back(value: Any) -> None:
    obj = {"metadata": {"name": "x", "annotations": {"a": value}}, "list": [value, {"k": value}], "n": [1, 1.5, True]}
    text = dump_yaml(obj)
    assert text == pure_dump(obj)
    assert load_yaml_stream(text) == [obj]
    assert yaml.safe_load(text) == obj


def test_every_sampled_code_point_is_written_as_pyyaml_writes_it() -> None:
    objs = {c: {"a": f"x{chr(c)}y", "b": chr(c), "c": f"{chr(c)}\n"} for c in [*CODE_POINTS, 0x85]}
    assert [hex(c) for c, obj in objs.items() if dump_yaml(obj) != pure_dump(obj)] == ["0x85"]
    assert [hex(c) for c, obj in objs.items() if load_yaml_stream(dump_yaml(obj)) != [obj]] == []


def test_next_line_survives_where_pyyaml_alone_lost_it() -> None:
    obj = {"a": "x\x85y"}
    assert yaml.safe_load(pure_dump(obj)) != obj  # PyYAML's emitter writes NEL raw; its reader takes a line break
    assert dump_yaml(obj) == 'a: "x\\Ny"\n'
    assert load_yaml_stream(dump_yaml(obj)) == [obj]


def test_libyaml_is_used_for_plain_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without libyaml's emitter doing the work the CLI is no faster: text it writes as-is goes through it."""
    calls: list[type] = []
    real = manifests._dump

    def counted(obj: Any, dumper: type) -> str:
        calls.append(dumper)
        return real(obj, dumper)

    monkeypatch.setattr(manifests, "_dump", counted)
    dump_yaml({"a": "plain"})
    dump_yaml({"a": "emoji \U0001f680"})
    dump_yaml({"a": "emoji \U0001f680 and next line \x85"})
    assert calls == [manifests._FastDumper, manifests._FastDumper, manifests._Dumper, manifests._FastDumper]


def test_the_rendered_examples_are_written_as_pyyaml_writes_them() -> None:
    files = sorted(RENDERED.glob("*.yaml"))
    assert files, f"no rendered examples in {RENDERED}"
    for path in files:
        text = path.read_text()
        for obj in load_yaml_stream(text):
            assert dump_yaml(obj) == pure_dump(obj), path.name
        assert load_yaml_stream(text) == [d for d in yaml.safe_load_all(text) if d is not None], path.name


@pytest.mark.parametrize(
    "text",
    ["a: [1, 2\nb: 3\n", "a: 1\n b: 2\n", "a: 'open\n", "- a\nb: 1\n", "a: 1\na: 2\n"],
    ids=["unclosed-flow", "bad-indent", "unclosed-quote", "list-then-map", "duplicate"],
)
def test_problems_name_the_lines_pyyaml_names(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def where() -> list[str]:
        with pytest.raises(InvalidJobError) as err:
            documents.load_documents(text, "f.yaml")
        return [p.path for p in err.value.problems]

    assert issubclass(documents._StrictLoader, yaml.CSafeLoader)
    fast = where()
    monkeypatch.setattr(documents, "_StrictLoader", type("Pure", (documents._Strict, yaml.SafeLoader), {}))
    assert fast == where()
