"""Fuzzing of input (pure): random mutations of the DIJobs in workflows/ (tests/mutations.py) through
``validate``, ``load_job`` and ``render``. Nothing raises; every refusal names a field path of the document;
what validation accepts renders. A fixed seed in CI (``derandomize``); ``DIHERA_FUZZ_EXAMPLES`` runs more.
The CRD's agreement with ``validate`` is checked against the API server in
tests/integration/test_crd_fuzz.py."""

from __future__ import annotations

import os
import re

from hypothesis import HealthCheck, given, settings

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
