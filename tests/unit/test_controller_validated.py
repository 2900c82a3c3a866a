"""A pass reuses the typed job of an unchanged DIJob (dihera/controller/validated.py)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from dihera.controller.validated import ValidatedJobs
from dihera.errors import InvalidJobError


def dijob(**meta: Any) -> dict[str, Any]:
    task = {"type": "learner", "replicas": 1, "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}
    metadata = {"name": "j", "namespace": "ns", "uid": "u", "generation": 1, **meta}
    return {
        "apiVersion": "diengine.opendilab.org/v2alpha1",
        "kind": "DIJob",
        "metadata": metadata,
        "spec": {"tasks": [task]},
    }


def test_an_unchanged_job_is_validated_once_and_any_change_that_validation_reads_loads_it_again() -> None:
    jobs = ValidatedJobs()
    first = jobs.load(dijob())
    again = copy.deepcopy(dijob(resourceVersion="9"))
    again["status"] = {"phase": ""}  # a status write: a new resourceVersion, the same job
    assert jobs.load(again) is first
    assert jobs.load(dijob(generation=2)) is not first  # the spec changed
    assert jobs.load(dijob(labels={"a": "b"})).labels == {"a": "b"}
    assert jobs.load(dijob(uid="other")) is not first
    taken_up = dijob()
    taken_up["status"] = {"phase": "Running"}
    assert jobs.load(taken_up) is not first  # some rules apply only to a job not yet taken up


def test_only_the_last_jobs_are_kept_and_invalid_or_unidentified_ones_are_not() -> None:
    jobs = ValidatedJobs(kept=2)
    a = jobs.load(dijob(uid="a"))
    jobs.load(dijob(uid="b"))
    jobs.load(dijob(uid="c"))
    assert jobs.load(dijob(uid="a")) is not a  # dropped as the least recently used
    no_uid = dijob()
    del no_uid["metadata"]["uid"]
    assert jobs.load(no_uid) is not jobs.load(no_uid)
    bad = dijob()
    bad["spec"]["tasks"][0]["replicas"] = -1
    for _ in range(2):
        with pytest.raises(InvalidJobError):
            jobs.load(bad)
