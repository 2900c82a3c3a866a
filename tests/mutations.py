"""Random mutations of valid DIJobs (hypothesis strategies), for the fuzz tests of validation and the CRD.

A mutation starts from one of the DIJobs in ``workflows/`` and applies one to three edits at random places:
a value replaced (by a number, a string, a quantity, null, a list, an object, a boolean), a field deleted, an
unknown field added, or a list emptied. Most results are invalid in one named field; some stay valid.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st

__all__ = ["BASES", "dijob_mutations", "paths"]

REPO = Path(__file__).resolve().parents[1]

#: Every DIJob document of workflows/*.yaml, by file name.
BASES: dict[str, dict[str, Any]] = {
    path.name: doc
    for path in sorted((REPO / "workflows").glob("*.yaml"))
    for doc in yaml.safe_load_all(path.read_text())
    if isinstance(doc, dict) and doc.get("kind") == "DIJob"
}

Path_ = tuple[str | int, ...]

#: Values a field may be set to: the types and edge values that break schemas and code.
VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=5),
    st.sampled_from([2**31, 2**53 + 1, 10**20]),
    st.sampled_from(["", " ", "0", "-1", "1Gi", "0Gi", "-1Gi", "abc", "learner", "None", "Always", "x" * 300]),
    st.text(max_size=12),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.builds(list),  # a new object each time: edits go into it
    st.builds(dict),
    st.lists(st.integers(min_value=-1, max_value=3), max_size=2),
    st.dictionaries(st.sampled_from(["name", "type", "replicas", "x"]), st.integers(0, 2), max_size=2),
)


def paths(doc: Any, prefix: Path_ = ()) -> Iterator[Path_]:
    """Every path into ``doc`` (dict keys and list indexes), the root's children first."""
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield (*prefix, key)
            yield from paths(value, (*prefix, key))
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            yield (*prefix, index)
            yield from paths(value, (*prefix, index))


def _parent(doc: Any, path: Path_) -> Any:
    for part in path[:-1]:
        doc = doc[part]
    return doc


@st.composite
def _edit(draw: st.DrawFn, doc: dict[str, Any]) -> str:
    """Change ``doc`` in place once; what was done (for the failure report)."""
    where = list(paths(doc))
    # fields of the spec are edited more often than those of pod templates (where most paths are)
    spec_first = [p for p in where if len(p) >= 2 and p[0] == "spec" and "template" not in p]
    path = draw(st.sampled_from(spec_first)) if spec_first and draw(st.booleans()) else draw(st.sampled_from(where))
    parent, key = _parent(doc, path), path[-1]
    kind = draw(st.sampled_from(["replace", "replace", "delete", "add", "empty"]))
    if kind == "delete" and isinstance(parent, dict):
        del parent[key]
        return f"deleted {path}"
    if kind == "add" and isinstance(parent[key], dict):
        name = draw(st.sampled_from(["extra", "replica", "Replicas", "backofflimit", "tasks", "x-y"]))
        parent[key][name] = draw(VALUES)
        return f"added {(*path, name)}"
    if kind == "empty" and isinstance(parent[key], list):
        parent[key] = []
        return f"emptied {path}"
    parent[key] = draw(VALUES)
    return f"set {path} = {parent[key]!r}"


@st.composite
def dijob_mutations(draw: st.DrawFn) -> tuple[str, dict[str, Any], list[str]]:
    """``(base file, mutated DIJob, edits made)``."""
    base = draw(st.sampled_from(sorted(BASES)))
    doc = copy.deepcopy(BASES[base])
    edits = [draw(_edit(doc)) for _ in range(draw(st.integers(min_value=1, max_value=3)))]
    return base, doc, edits
