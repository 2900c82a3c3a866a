"""A pass reuses the typed job of an unchanged DIJob (dihera/controller/validated.py)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from dihera.controller.validated import ValidatedJobs
from dihera.errors import InvalidJobError
from tests.builders import DIJobBuilder, TaskBuilder


def dijob(**meta: Any) -> dict[str, Any]:
    """DIJob ns/j (uid u, generation 1) of one learner; ``meta``: other or changed metadata fields."""
    learner = TaskBuilder("learner").replicas(1).container(name="c", image="i")
    body = DIJobBuilder("j").namespace("ns").uid("u").generation(1).task(learner).obj()
    body["metadata"].update(meta)
    return body


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
