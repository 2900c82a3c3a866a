"""Deterministic YAML for Kubernetes objects: same objects, byte-identical text."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import yaml

__all__ = ["dump_yaml", "dump_yaml_stream", "load_yaml_stream"]


class _Dumper(yaml.SafeDumper):
    """Block style, keys in insertion order, long strings never folded."""


def _str(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    if "\n" in data:
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", data)


_Dumper.add_representer(str, _str)


def dump_yaml(obj: Mapping[str, Any]) -> str:
    """One object as YAML."""
    return yaml.dump(
        obj,
        Dumper=_Dumper,
        sort_keys=False,
        default_flow_style=False,
        width=1 << 20,
        allow_unicode=True,
    )


def dump_yaml_stream(objs: Iterable[Mapping[str, Any]]) -> str:
    """Several objects as one YAML stream (``---`` between documents)."""
    return "".join("---\n" + dump_yaml(o) for o in objs)


def load_yaml_stream(text: str) -> list[dict[str, Any]]:
    """Every non-empty document of a YAML stream."""
    return [d for d in yaml.safe_load_all(text) if d is not None]
