"""Read the YAML a person typed: strict parsing and the split into DIJobs and companion objects (pure).

A file may hold several documents: DIJobs, and the Kubernetes objects that go with them (the
DI-engine config as a ConfigMap the job mounts, as DI-orchestrator's published samples do).
DIJobs are validated and rendered; every other object is passed through untouched and created
first. Parsing is strict: a key given twice in one mapping is an error (YAML would keep the last
silently), and so is a file with no document at all. Every problem of the file is reported at once.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import yaml

from dihera.errors import InvalidJobError, Problem, format_value
from dihera.schema import KIND

__all__ = ["Document", "Manifests", "load_documents", "split_manifests"]

_MERGE_TAG = "tag:yaml.org,2002:merge"


@dataclass(frozen=True)
class Document:
    """One YAML document: its position in the file (from 1), the line it starts on, its content."""

    position: int
    line: int
    body: Any

    @property
    def where(self) -> str:
        return f"document {self.position} (line {self.line})"


@dataclass(frozen=True)
class Manifests:
    """A file's DIJobs and its other Kubernetes objects, each in file order."""

    jobs: tuple[Document, ...]
    others: tuple[Document, ...]


class _Strict(yaml.constructor.SafeConstructor):
    """Records every key given twice in one mapping (merge keys ``<<`` may override), on a SafeLoader."""

    duplicates: list[Problem]

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == _MERGE_TAG or not isinstance(key_node, yaml.ScalarNode):
                continue
            key, line = self.construct_object(key_node), key_node.start_mark.line + 1
            if key in seen:
                self.duplicates.append(
                    Problem(f"line {line}", f"duplicate key {key!r} (first at line {seen[key]}); give each key once")
                )
            else:
                seen[key] = line
        return super().construct_mapping(node, deep=deep)


if TYPE_CHECKING:
    _SafeLoader = yaml.SafeLoader
else:
    _SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _StrictLoader(_Strict, _SafeLoader):
    """On libyaml's parser when PyYAML has it (several times faster; the same documents and lines)."""


def load_documents(text: str, source: str) -> list[Document]:
    """Every non-empty document of ``text``; raises :class:`InvalidJobError` naming ``source``.

    Errors: YAML that does not parse, duplicate keys (all of them), no document at all.
    """
    loader = _StrictLoader(text)
    loader.duplicates = []
    docs: list[Document] = []
    position = 0
    try:
        while loader.check_node():
            node = loader.get_node()
            position += 1
            body = loader.construct_document(node) if node is not None else None
            if node is not None and body is not None:
                docs.append(Document(position, node.start_mark.line + 1, body))
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else "(file)"
        raise InvalidJobError([Problem(where, f"not valid YAML: {' '.join(str(err).split())}")], source) from err
    finally:
        loader.dispose()
    if loader.duplicates:
        raise InvalidJobError(loader.duplicates, source)
    if not docs:
        raise InvalidJobError([Problem("(file)", "no YAML document: the input is empty or only comments")], source)
    return docs


def _is_job(body: dict[Any, Any]) -> bool:
    """A DIJob by kind, or a document with neither apiVersion nor kind that has DIJob tasks."""
    if "kind" in body or "apiVersion" in body:
        return body.get("kind") == KIND
    return isinstance(body.get("spec"), dict) and "tasks" in body["spec"]


def _object_problems(doc: Document) -> list[Problem]:
    body = doc.body
    if not isinstance(body, dict):
        return [Problem(doc.where, f"must be a Kubernetes object (a mapping), got {format_value(body)}")]
    missing = [k for k in ("apiVersion", "kind") if not isinstance(body.get(k), str) or not body[k]]
    if missing:
        return [Problem(doc.where, f"is not a Kubernetes object: {' and '.join(missing)} missing")]
    return []


def split_manifests(docs: list[Document], source: str) -> Manifests:
    """DIJobs and other objects; raises :class:`InvalidJobError` for documents that are neither, or no DIJob."""
    jobs = tuple(d for d in docs if isinstance(d.body, dict) and _is_job(d.body))
    others = tuple(d for d in docs if d not in jobs)
    problems = [p for d in others for p in _object_problems(d)]
    if not jobs:
        problems.append(Problem("(file)", f"no DIJob (kind: {KIND}) among its {len(docs)} document(s)"))
    if problems:
        raise InvalidJobError(problems, source)
    return Manifests(jobs, others)
