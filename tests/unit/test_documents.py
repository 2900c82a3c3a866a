"""Strict YAML reading and the split of a file into DIJobs and companion objects."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from dihera.documents import load_documents, split_manifests
from dihera.errors import InvalidJobError
from tests.builders import configmap, job, task


def problems(text: str) -> list[str]:
    with pytest.raises(InvalidJobError) as err:
        split_manifests(load_documents(text, "f.yaml"), "f.yaml")
    assert err.value.source == "f.yaml"
    return [str(p) for p in err.value.problems]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "a: 1\na: 2\n", ["line 2: duplicate key 'a' (first at line 1); give each key once"], id="top-level"
        ),
        pytest.param(
            "s:\n  t:\n  - x: 1\n    y: 2\n    x: 3\n",
            ["line 5: duplicate key 'x' (first at line 3); give each key once"],
            id="nested-in-list",
        ),
        pytest.param(
            "a: 1\na: 2\nb: 1\nb: 2\n",
            [
                "line 2: duplicate key 'a' (first at line 1); give each key once",
                "line 4: duplicate key 'b' (first at line 3); give each key once",
            ],
            id="all-at-once",
        ),
        pytest.param(
            "kind: DIJob\n---\nkind: DIJob\nkind: X\n",
            ["line 4: duplicate key 'kind' (first at line 3); give each key once"],
            id="second-document",
        ),
    ],
)
def test_duplicate_keys(text: str, expected: list[str]) -> None:
    assert problems(text) == expected


def test_merge_keys_may_override() -> None:
    text = "base: &b {image: a, name: m}\nc:\n  <<: *b\n  image: b\n"
    (doc,) = load_documents(text, "f.yaml")
    assert doc.body["c"] == {"image": "b", "name": "m"}


@pytest.mark.parametrize("text", ["", "\n\n", "# a\n# b\n", "---\n", "---\n---\n...\n"])
def test_empty_input(text: str) -> None:
    assert problems(text) == ["(file): no YAML document: the input is empty or only comments"]


def test_positions_count_every_document_and_lines_start_at_one() -> None:
    text = "---\n---\n" + yaml.safe_dump(job(task("learner"))) + "---\n" + yaml.safe_dump(configmap())
    docs = load_documents(text, "f.yaml")
    assert [(d.position, d.line) for d in docs] == [(2, 3), (3, 3 + len(yaml.safe_dump(job()).splitlines()) + 1)]


@pytest.mark.parametrize(
    ("documents", "jobs", "others"),
    [
        pytest.param([job(), configmap()], [0], [1], id="job-then-config"),
        pytest.param([configmap(), job(), configmap("b")], [1], [0, 2], id="config-first"),
        pytest.param(
            [{"spec": {"tasks": [task("learner")]}, "metadata": {"name": "j"}}],
            [0],
            [],
            id="dijob-without-apiversion-and-kind",
        ),
        pytest.param([job(name="a"), job(name="b")], [0, 1], [], id="two-jobs"),
    ],
)
def test_split(documents: list[dict[str, Any]], jobs: list[int], others: list[int]) -> None:
    manifests = split_manifests(load_documents(yaml.safe_dump_all(documents), "f.yaml"), "f.yaml")
    assert [d.body for d in manifests.jobs] == [documents[i] for i in jobs]
    assert [d.body for d in manifests.others] == [documents[i] for i in others]


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        pytest.param({"kind": "ConfigMap"}, "is not a Kubernetes object: apiVersion missing", id="no-api-version"),
        pytest.param({"apiVersion": "v1"}, "is not a Kubernetes object: kind missing", id="no-kind"),
        pytest.param({"data": {"a": "b"}}, "is not a Kubernetes object: apiVersion and kind missing", id="neither"),
        pytest.param(["a"], "must be a Kubernetes object (a mapping), got ['a']", id="list"),
    ],
)
def test_a_document_that_is_no_object_is_named_by_position(extra: Any, expected: str) -> None:
    text = yaml.safe_dump_all([job(), extra])
    line = len(yaml.safe_dump(job()).splitlines()) + 2
    assert problems(text) == [f"document 2 (line {line}): {expected}"]


def test_a_file_without_a_dijob() -> None:
    assert problems(yaml.safe_dump(configmap())) == ["(file): no DIJob (kind: DIJob) among its 1 document(s)"]
