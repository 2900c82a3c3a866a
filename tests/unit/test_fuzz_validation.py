"""Fuzzing of input (pure): random mutations of the DIJobs in workflows/ (tests/mutations.py) through
``validate``, ``load_job`` and ``render``, and random YAML through what ``dihera validate`` does with a file.
Nothing raises; every refusal names a field path of the document (or a line of the file); what validation
accepts renders. A fixed seed in CI (``derandomize``); ``DIHERA_FUZZ_EXAMPLES`` runs more.
The CRD's agreement with ``validate`` is checked against the API server in
tests/integration/test_crd_fuzz.py."""

from __future__ import annotations

import os
import re

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dihera.documents import load_documents, split_manifests
from dihera.errors import InvalidJobError
from dihera.render import render
from dihera.validation import load_job, validate
from tests.mutations import dijob_mutations

EXAMPLES = int(os.environ.get("DIHERA_FUZZ_EXAMPLES", "400"))

#: A problem's path: the root, or a field path of the document (``spec.tasks[0].template.spec.containers[1].name``,
#: ``metadata.annotations.diengine/finish-grace-seconds``).
FIELD_PATH = re.compile(r"^(\(root\)|(apiVersion|kind|metadata|spec|status)(\.[^\s\[\]]+|\[\d+\])*)$")


@settings(
    max_examples=EXAMPLES,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(dijob_mutations())
def test_a_mutated_job_is_refused_with_named_fields_or_renders(case: tuple[str, dict, list[str]]) -> None:
    base, doc, edits = case
    problems = validate(doc)
    for problem in problems:
        assert FIELD_PATH.match(problem.path), (base, edits, str(problem))
        assert problem.message.strip(), (base, edits, problem.path)
    if not problems:
        rendered = render(load_job(doc, "fuzz"))
        assert rendered.workflow["kind"] == "Workflow", (base, edits)


#: Text that looks like YAML: its syntax characters, words of a DIJob, numbers, spaces and new lines.
YAML_ALPHABET = st.sampled_from(
    [*":-[]{},#&*!|>'\"%@` \n\t", "spec", "tasks", "name", "kind: DIJob", "apiVersion", "- ", "  ", "1", "0.5", "---"]
)
#: Random JSON-like documents (what a YAML file of any shape parses to).
JSON_LIKE = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None)
@given(st.one_of(st.lists(YAML_ALPHABET, max_size=40).map("".join), JSON_LIKE.map(yaml.safe_dump)))
def test_random_yaml_is_read_or_refused_naming_where(text: str) -> None:
    """What ``dihera validate`` does with a file: parse (duplicate keys refused), pick the DIJobs, validate each."""
    try:
        manifests = split_manifests(load_documents(text, "fuzz.yaml"), "fuzz.yaml")
    except InvalidJobError as err:
        assert err.problems and all(p.path and p.message for p in err.problems), (text, str(err))
        return
    for doc in manifests.jobs:
        for problem in validate(doc.body):
            assert FIELD_PATH.match(problem.path), (text, str(problem))
