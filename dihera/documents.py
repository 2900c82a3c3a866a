"""Read the YAML a person typed: strict parsing and the split into DIJobs and companion objects (pure).

A file may hold several documents: DIJobs, and the Kubernetes objects that go with them (the
DI-engine config as a ConfigMap the job mounts, as DI-orchestrator's published samples do).
DIJobs are validated and rendered; every other object is passed through untouched and created
first. Parsing is strict: a key given twice in one mapping is an error (YAML would keep the last
silently), and so is a file with no document at all. Every problem of the file is reported at once.

Parsing is bounded: every walk after it (the schema check, ``without_nulls``, ``convert``'s scan) visits
the tree as aliases expand it, so a 1 KB file of nested aliases (a "billion laughs") would hold them for
minutes and gigabytes. The composer counts each document's nodes as its aliases expand them (an alias
counts the size of the node it names, computed once, when that node ends) and refuses a document whose
aliases add more than :data:`MAX_ALIAS_NODES`, an alias inside the node it names (a cycle) and nesting
past :data:`MAX_DEPTH`, naming the line; at the first such event, before anything is built. This is the
one loader of the files people give dihera (``validate``, ``render``, ``submit``, ``convert``).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import yaml

from dihera.errors import InvalidJobError, Problem, format_value
from dihera.schema import KIND

__all__ = ["MAX_ALIAS_NODES", "MAX_DEPTH", "Document", "Manifests", "load_documents", "load_stream", "split_manifests"]

_MERGE_TAG = "tag:yaml.org,2002:merge"
#: How many nodes (scalars, sequences, mappings) aliases may add to one document beyond those written.
#: A DIJob is a few hundred nodes, and a merge key (``<<: *defaults``, as Helm and compose users write)
#: adds its anchored mapping's few dozen, so real files stay far below; the walkers after the loader then
#: do at most the work of the text plus this many nodes (98 containers whose args alias one list of 1,000
#: strings, just below: 1.9 s to validate, 4.9 s to render, on 2 busy cores). A document without aliases
#: is never refused: its cost is already that of its text.
MAX_ALIAS_NODES = 100_000
#: How deep a document may nest. A DIJob nests about 15 levels (a pod's affinity is the deepest part);
#: the walkers recurse a few Python frames per level against Python's limit of 1,000 frames.
MAX_DEPTH = 100


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


class _Refused(Exception):
    """A document past the loader's bounds: the problem, raised at the event that crossed them."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(str(problem))
        self.problem = problem


class _Budget(yaml.composer.Composer):
    """PyYAML's composer (also on libyaml's parser, whose own composer cannot be hooked), counting each
    document's nodes as aliases expand them; raises :class:`_Refused` past :data:`MAX_ALIAS_NODES` or
    :data:`MAX_DEPTH`, or at an alias inside the node it names.

    PyYAML gives an alias the very node its anchor names, so building the document stays cheap: only
    the size is counted (each anchored node's once, when it ends), never a copy made.
    """

    if TYPE_CHECKING:

        def peek_event(self) -> yaml.Event: ...  # the parser's

    def __init__(self) -> None:
        self.anchors: dict[Any, yaml.Node] = {}
        self._position = self._first_line = self._depth = self._added = self._counted = 0
        self._sizes: dict[str, int] = {}

    def compose_document(self) -> yaml.Node | None:
        self._position += 1
        self._first_line = self._depth = self._added = 0
        self._counted = 0  # nodes of the document so far, aliases expanded
        self._sizes = {}  # anchor -> its node's expanded size, once the node has ended
        return super().compose_document()

    def _refuse(self, line: int, message: str) -> _Refused:
        where = f"document {self._position} (line {self._first_line or line})"
        return _Refused(Problem(f"line {line}", f"{where}: {message}"))

    def _alias(self, anchor: str, line: int) -> None:
        if anchor not in self.anchors:
            return  # the composer says it is undefined
        if anchor not in self._sizes:
            raise self._refuse(
                line,
                f"alias *{anchor} is inside the node &{anchor} it names (a cycle); "
                "Kubernetes objects are trees: write the value out",
            )
        self._added += self._sizes[anchor]
        self._counted += self._sizes[anchor]
        if self._added > MAX_ALIAS_NODES:
            raise self._refuse(
                line,
                f"alias *{anchor} makes the document's aliases add {self._added:,} nodes, more than the "
                f"{MAX_ALIAS_NODES:,} allowed (a DIJob is a few hundred; nested aliases multiply); "
                "write the values out or alias less",
            )

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        event = self.peek_event()
        line = event.start_mark.line + 1 if event.start_mark is not None else 0
        if isinstance(event, yaml.AliasEvent):
            self._alias(str(event.anchor), line)
            return super().compose_node(parent, index)
        anchor = getattr(event, "anchor", None)
        self._first_line = self._first_line or line
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise self._refuse(line, f"nests deeper than {MAX_DEPTH} levels (a DIJob nests about 15)")
        start = self._counted
        self._counted += 1
        node = super().compose_node(parent, index)
        self._depth -= 1
        if anchor is not None:
            self._sizes[anchor] = self._counted - start
        return node


if TYPE_CHECKING:
    _SafeLoader = yaml.SafeLoader
else:
    _SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _StrictLoader(_Budget, _Strict, _SafeLoader):
    """On libyaml's parser when PyYAML has it (several times faster; the same documents and lines), with
    PyYAML's composer (:class:`_Budget`): about a quarter slower than libyaml's composer, still over ten
    times faster than PyYAML's parser."""

    def __init__(self, stream: str) -> None:
        _SafeLoader.__init__(self, stream)
        _Budget.__init__(self)


def load_stream(text: str, source: str) -> list[Document]:
    """Every non-empty document of ``text`` (none for an empty text); raises :class:`InvalidJobError`
    naming ``source`` for YAML that does not parse, duplicate keys (all of them) and a document past the
    loader's bounds (:data:`MAX_ALIAS_NODES`, :data:`MAX_DEPTH`, a cycle of aliases)."""
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
    except _Refused as err:
        raise InvalidJobError([err.problem], source) from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else "(file)"
        raise InvalidJobError([Problem(where, f"not valid YAML: {' '.join(str(err).split())}")], source) from err
    finally:
        loader.dispose()
    if loader.duplicates:
        raise InvalidJobError(loader.duplicates, source)
    return docs


def load_documents(text: str, source: str) -> list[Document]:
    """Every non-empty document of ``text`` (:func:`load_stream`); no document at all is an error too."""
    docs = load_stream(text, source)
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
    is_job = [isinstance(d.body, dict) and _is_job(d.body) for d in docs]
    jobs = tuple(d for d, job in zip(docs, is_job, strict=True) if job)
    others = tuple(d for d, job in zip(docs, is_job, strict=True) if not job)  # one pass: a DIJob-sized == per
    # document pair made 20,000 documents take minutes
    problems = [p for d in others for p in _object_problems(d)]
    if not jobs:
        problems.append(Problem("(file)", f"no DIJob (kind: {KIND}) among its {len(docs)} document(s)"))
    if problems:
        raise InvalidJobError(problems, source)
    return Manifests(jobs, others)
