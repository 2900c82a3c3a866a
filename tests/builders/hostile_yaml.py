"""YAML texts an attacker or a careless user writes: nested aliases ("billion laughs"), cycles, deep nesting.

Each is a DIJob (its first line is line 1) whose hostile part sits where validation walks the expanded
tree: under ``spec.tasks[0].template.metadata`` or in an unknown container field.
"""

from __future__ import annotations

__all__ = ["alias_line", "deep_nesting", "nested_aliases", "recursive_alias"]

_HEAD = """apiVersion: diengine.opendilab.org/v2alpha1
kind: DIJob
metadata:
  name: lol
spec:
  tasks:
  - type: learner
    template:
"""
_CONTAINER = "      spec:\n        containers:\n        - name: c\n          image: x\n"
#: Where :func:`nested_aliases` puts its anchors: the text before them, and their indentation.
_PLACES = {
    "metadata": ("      metadata:\n        annotations:\n", 10),
    "container": (_CONTAINER + "          lol:\n", 12),
}


def alias_line(level: int, where: str = "metadata") -> int:
    """The line of :func:`nested_aliases`'s aliases of anchor ``l<level - 1>`` (``l<level>: &l<level> [...]``)."""
    return _HEAD.count("\n") + _PLACES[where][0].count("\n") + 1 + level


def _indent(lines: list[str], spaces: int) -> str:
    return "".join(" " * spaces + line + "\n" for line in lines)


def nested_aliases(levels: int, where: str = "metadata", fan_out: int = 9) -> str:
    """A DIJob of about 1 KB whose ``levels`` anchors each list ``fan_out`` aliases of the one before: expanded,
    ``fan_out ** levels`` strings. ``where``: ``metadata`` (the pod template's) or ``container`` (an unknown
    field of its container)."""
    anchors = ['l0: &l0 "lol"']
    anchors += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * fan_out)}]" for i in range(1, levels + 1)]
    before, spaces = _PLACES[where]
    return _HEAD + before + _indent(anchors, spaces) + (_CONTAINER if where == "metadata" else "")


def recursive_alias() -> str:
    """A DIJob whose annotation is a list holding itself (``&x [1, *x]``): the alias is on line 11."""
    return _HEAD + "      metadata:\n        annotations:\n          a: &x [1, *x]\n" + _CONTAINER


def deep_nesting(depth: int) -> str:
    """A DIJob with ``depth`` nested flow lists in an annotation, on line 11."""
    return _HEAD + f"      metadata:\n        annotations:\n          a: {'[' * depth}{']' * depth}\n" + _CONTAINER
