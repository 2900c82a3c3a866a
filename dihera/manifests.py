"""Deterministic YAML for Kubernetes objects: same objects, byte-identical text; and reading it back
through the project's one bounded, strict loader (:mod:`dihera.documents`)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

import yaml

from dihera.documents import load_stream

__all__ = ["dump_yaml", "dump_yaml_stream", "load_yaml_stream"]


#: libyaml's emitter when PyYAML was built with it (several times faster), else PyYAML's own.
_CDumper = getattr(yaml, "CSafeDumper", None)
#: Measured over all code points, libyaml writes two kinds of character differently from PyYAML's emitter:
#: every one beyond U+FFFF it escapes (``"\U0001F680"``; text with one is written again by PyYAML's emitter,
#: which keeps it readable), and U+0085 (NEL) it escapes as ``"\N"``, where PyYAML writes it as it is and
#: reads it back as a line break: the text changed (PyYAML's bug), so libyaml's text is kept.
_ESCAPED_BY_LIBYAML = re.compile(r"\\U")
_NEXT_LINE = re.compile(r"\\N")


def _str(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    if "\n" in data:
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", data)


class _Dumper(yaml.SafeDumper):
    """Block style, keys in insertion order, long strings never folded."""


_Dumper.add_representer(str, _str)

if _CDumper is not None:

    class _FastDumper(_CDumper):  # type: ignore[misc,valid-type]
        """:class:`_Dumper` on libyaml's emitter: the same text (see :data:`_ESCAPED_BY_LIBYAML`)."""

    _FastDumper.add_representer(str, _str)


def _dump(obj: Mapping[str, object], dumper: type) -> str:
    return yaml.dump(obj, Dumper=dumper, sort_keys=False, default_flow_style=False, width=1 << 20, allow_unicode=True)


def dump_yaml(obj: Mapping[str, object]) -> str:
    """One object as YAML (byte-identical whether or not PyYAML has libyaml)."""
    if _CDumper is None:
        return _dump(obj, _Dumper)
    text = _dump(obj, _FastDumper)
    if _ESCAPED_BY_LIBYAML.search(text) and not _NEXT_LINE.search(text):
        return _dump(obj, _Dumper)
    return text


def dump_yaml_stream(objs: Iterable[Mapping[str, object]]) -> str:
    """Several objects as one YAML stream (``---`` between documents)."""
    return "".join("---\n" + dump_yaml(o) for o in objs)


def load_yaml_stream(text: str, source: str = "<YAML stream>") -> list[dict[str, object]]:
    """Every non-empty document of a YAML stream, read as :func:`dihera.documents.load_stream` reads a
    person's file (duplicate keys and aliases past its bounds raise :class:`~dihera.errors.InvalidJobError`)."""
    return [d.body for d in load_stream(text, source)]
