"""Strict YAML reading and the split of a file into DIJobs and companion objects."""

from __future__ import annotations

import time
from typing import Any

import pytest
import yaml

from dihera import documents
from dihera.documents import MAX_ALIAS_NODES, MAX_DEPTH, load_documents, split_manifests
from dihera.errors import InvalidJobError
from dihera.manifests import load_yaml_stream
from tests.builders import configmap, job, task
from tests.builders.hostile_yaml import alias_line, deep_nesting, nested_aliases, recursive_alias


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


# -- bounds: what an attacker or a careless user writes ----------------------------------------------------
@pytest.mark.parametrize("where", ["metadata", "container"])
@pytest.mark.parametrize("levels", [9, 20])
def test_nested_aliases_are_refused_at_the_alias_that_crosses_the_bound_in_well_under_a_second(
    levels: int, where: str
) -> None:
    text = nested_aliases(levels, where)
    assert len(text) < 2048  # a KB or two: 9 ** levels strings once expanded
    start = time.perf_counter()
    found = problems(text)
    took = time.perf_counter() - start
    print(f"nesting {levels} under {where}: refused in {took:.3f} s")
    # l5 is 66,430 nodes expanded: the first alias of it takes the aliases past 100,000 (74,727 + 66,430)
    assert found == [
        f"line {alias_line(6, where)}: document 1 (line 1): alias *l5 makes the document's aliases add 141,157 nodes, "
        f"more than the {MAX_ALIAS_NODES:,} allowed (a DIJob is a few hundred; nested aliases multiply); "
        "write the values out or alias less"
    ]
    assert took < 1.0  # the bar; it takes milliseconds: nothing is expanded


def test_the_bound_is_on_what_aliases_add_and_counts_each_document_apart() -> None:
    anchor = "a: &a [" + ", ".join(["x"] * 999) + "]\n"  # 1,000 nodes: the list and its strings

    def aliases(n: int) -> str:
        return "b: [" + ", ".join(["*a"] * n) + "]\n"

    at_the_bound = anchor + aliases(100)  # adds 100 * 1,000
    assert len(load_documents(at_the_bound + "---\n" + at_the_bound, "f.yaml")[1].body["b"]) == 100
    assert problems(anchor + aliases(100) + "c: *a\n") == [
        "line 3: document 1 (line 1): alias *a makes the document's aliases add 101,000 nodes, more than the "
        "100,000 allowed (a DIJob is a few hundred; nested aliases multiply); write the values out or alias less"
    ]


def test_a_large_document_without_aliases_is_not_refused() -> None:
    text = "a: [" + ", ".join(map(str, range(MAX_ALIAS_NODES))) + "]\n"  # more nodes as written: its cost is its text's
    (doc,) = load_documents(text, "f.yaml")
    assert doc.body == {"a": list(range(MAX_ALIAS_NODES))}


def test_merge_keys_as_helm_and_compose_users_write_them_keep_working() -> None:
    text = """
x-defaults: &container
  image: ding:1
  imagePullPolicy: IfNotPresent
  resources: {requests: {cpu: "1"}}
spec:
  tasks:
  - template: {spec: {containers: [{<<: *container, name: learner}]}}
  - template: {spec: {containers: [{<<: *container, name: collector, image: ding:2}]}}
"""
    (doc,) = load_documents(text, "f.yaml")
    containers = [t["template"]["spec"]["containers"][0] for t in doc.body["spec"]["tasks"]]
    assert [(c["name"], c["image"], c["resources"]) for c in containers] == [
        ("learner", "ding:1", {"requests": {"cpu": "1"}}),
        ("collector", "ding:2", {"requests": {"cpu": "1"}}),
    ]


def test_an_alias_inside_the_node_it_names_is_refused() -> None:
    assert problems(recursive_alias()) == [
        "line 11: document 1 (line 1): alias *x is inside the node &x it names (a cycle); "
        "Kubernetes objects are trees: write the value out"
    ]


def test_nesting_past_the_bound_is_refused_and_up_to_it_read() -> None:
    assert problems(deep_nesting(500)) == [
        f"line 11: document 1 (line 1): nests deeper than {MAX_DEPTH} levels (a DIJob nests about 15)"
    ]
    # the document's mapping down to the annotations' mapping: 7 levels, then the lists
    assert problems(deep_nesting(MAX_DEPTH - 6)) == problems(deep_nesting(500))
    (doc,) = load_documents(deep_nesting(MAX_DEPTH - 7), "f.yaml")
    value, depth = doc.body["spec"]["tasks"][0]["template"]["metadata"]["annotations"]["a"], 0
    while value != []:
        value, depth = value[0], depth + 1
    assert depth == MAX_DEPTH - 8  # the innermost list is empty


def test_the_bounds_name_the_document_in_a_stream() -> None:
    text = yaml.safe_dump(configmap()) + "---\n" + recursive_alias()
    line = len(yaml.safe_dump(configmap()).splitlines()) + 2
    assert problems(text) == [
        f"line {line + 10}: document 2 (line {line}): alias *x is inside the node &x it names (a cycle); "
        "Kubernetes objects are trees: write the value out"
    ]


@pytest.mark.parametrize("text", [nested_aliases(9), recursive_alias(), deep_nesting(500)])
def test_libyaml_and_pyyaml_parsers_refuse_alike(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert issubclass(documents._StrictLoader, yaml.CSafeLoader)
    fast = problems(text)
    pure = type("Pure", (documents._Budget, documents._Strict, yaml.SafeLoader), {})
    pure.__init__ = lambda self, stream: (yaml.SafeLoader.__init__(self, stream), documents._Budget.__init__(self))[0]
    monkeypatch.setattr(documents, "_StrictLoader", pure)
    assert problems(text) == fast


def test_yaml_streams_read_back_go_through_the_same_bounds() -> None:
    with pytest.raises(InvalidJobError) as err:
        load_yaml_stream(nested_aliases(9))
    assert "alias *l5" in str(err.value)
