"""The bounded write of a report (dihera/kube/profilings.py) over an in-memory DIJob with the API server's
optimistic concurrency: a stale copy costs a read and a retry, a bound is checked against the DIJob as it is
when written, a DIJob that keeps changing gives up with ProfilingsConflict."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from dihera.kube import profilings as kube_profilings
from dihera.profilings import MAX_KEYS, ProfilingsConflict, ProfilingsError, merge


class Dijob:
    """One DIJob's ``CustomObjectsApi`` calls: a merge patch of the status honours ``metadata.resourceVersion``."""

    def __init__(self, profilings: dict[str, Any] | None = None) -> None:
        self.body: dict[str, Any] | None = {"metadata": {"resourceVersion": "1"}, "status": {"profilings": profilings}}
        self.reads = self.patches = 0
        self.others_write = 0  # how many times another writer changes the DIJob right after a read

    def get_namespaced_custom_object(self, *args: Any) -> dict[str, Any]:
        self.reads += 1
        if self.body is None:
            raise ApiException(status=404, reason="NotFound")
        read = copy.deepcopy(self.body)
        if self.others_write:
            self.others_write -= 1
            self._bump()
        return read

    def patch_namespaced_custom_object_status(self, *args: Any) -> dict[str, Any]:
        patch = args[-1]
        self.patches += 1
        assert self.body is not None
        if patch["metadata"]["resourceVersion"] != self.body["metadata"]["resourceVersion"]:
            raise ApiException(status=409, reason="Conflict")
        self.body["status"] = merge(self.body["status"], patch["status"])
        self._bump()
        return copy.deepcopy(self.body)

    def _bump(self) -> None:
        assert self.body is not None
        self.body["metadata"]["resourceVersion"] = str(int(self.body["metadata"]["resourceVersion"]) + 1)


@pytest.fixture
def dijob(monkeypatch: pytest.MonkeyPatch) -> Dijob:
    job = Dijob({"fps": 1})
    monkeypatch.setattr(kube_profilings.client, "CustomObjectsApi", lambda api: job)
    monkeypatch.setattr(kube_profilings.time, "sleep", lambda seconds: None)
    return job


def test_a_fresh_cached_copy_is_written_against_without_a_read(dijob: Dijob) -> None:
    assert kube_profilings.write_profilings(None, "ns", "j", {"a": 2}, cached=copy.deepcopy(dijob.body))
    assert (dijob.reads, dijob.patches) == (0, 1)
    assert dijob.body is not None and dijob.body["status"]["profilings"] == {"fps": 1, "a": 2}


def test_a_stale_copy_costs_one_read_and_one_more_write(dijob: Dijob) -> None:
    stale = copy.deepcopy(dijob.body)
    dijob._bump()
    assert kube_profilings.write_profilings(None, "ns", "j", {"a": 2}, cached=stale)
    assert (dijob.reads, dijob.patches) == (1, 2)


def test_the_bound_is_checked_against_the_dijob_as_written(dijob: Dijob) -> None:
    """The cached copy has room; the DIJob, filled meanwhile by another writer, has none: refused, not written."""
    roomy = copy.deepcopy(dijob.body)
    assert dijob.body is not None
    dijob.body["status"]["profilings"] = {f"k{i}": i for i in range(MAX_KEYS)}
    dijob._bump()
    with pytest.raises(ProfilingsError, match=f"more than {MAX_KEYS}"):
        kube_profilings.write_profilings(None, "ns", "j", {"new": 1}, cached=roomy)
    assert dijob.patches == 1 and "new" not in dijob.body["status"]["profilings"]


def test_a_dijob_that_keeps_changing_gives_up_and_a_missing_one_is_false(dijob: Dijob) -> None:
    dijob.others_write = kube_profilings.ATTEMPTS
    with pytest.raises(ProfilingsConflict, match="send it again"):
        kube_profilings.write_profilings(None, "ns", "j", {"a": 2})
    assert dijob.patches == kube_profilings.ATTEMPTS
    dijob.body = None
    assert kube_profilings.write_profilings(None, "ns", "j", {"a": 2}) is False
