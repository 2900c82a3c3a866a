"""Fuzzing of input through the API server: random mutations of the DIJobs in workflows/ (tests/mutations.py),
created with a server-side dry run as ``kubectl create`` sends them (``fieldValidation=Strict``). Nothing the
CRD refuses is accepted by ``dihera validate``: a job that passes ``validate`` is one the API server takes.
(``validate`` refuses more: the pod templates against core/v1, the environment's size, the task order, which
the CRD cannot check.) A fixed seed in CI; ``DIHERA_FUZZ_EXAMPLES`` runs more."""

from __future__ import annotations

import copy
import json
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from kubernetes import client

from dihera.schema import GROUP, PLURAL, VERSION
from dihera.validation import validate
from tests.mutations import dijob_mutations

pytestmark = pytest.mark.cluster

EXAMPLES = int(os.environ.get("DIHERA_FUZZ_EXAMPLES", "250"))


def server_refusal(api: client.ApiClient, namespace: str, manifest: dict[str, Any]) -> str | None:
    """Why the API server refuses to create ``manifest`` (dry run, strict field validation), or None."""
    try:
        client.CustomObjectsApi(api).create_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, manifest, dry_run="All", field_validation="Strict"
        )
    except client.ApiException as err:
        if err.status not in (400, 422):
            raise
        try:
            return str(json.loads(err.body).get("message"))
        except (TypeError, ValueError):
            return str(err.body)
    return None


@settings(
    max_examples=EXAMPLES,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(case=dijob_mutations())
def test_nothing_the_crd_refuses_is_accepted_by_validate(
    dijob_crd: None, cluster: client.ApiClient, namespace: str, case: tuple[str, dict[str, Any], list[str]]
) -> None:
    base, doc, edits = case
    manifest = copy.deepcopy(doc)
    if isinstance(manifest.get("metadata"), dict):
        manifest["metadata"].pop("namespace", None)  # the request's namespace, not a field under test
    problems = validate(manifest)
    refused = server_refusal(cluster, namespace, manifest)
    assert problems or refused is None, f"{base} with {edits}: validate accepts, the API server says: {refused}"
