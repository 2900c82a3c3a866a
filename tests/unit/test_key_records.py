"""Idempotency-Key records: round trip, expiry, a bounded number and size per job, the in-memory store, and the
DIJob's annotation holding them (a retry of a scale whose answer is too large to keep is answered, not run)."""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch  # type: ignore[import-untyped]
import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from dihera.constants import ANNOTATION_IDEMPOTENCY
from dihera.key_records import ANSWER_BYTES, KeyReused, Record, decode, encode, prune
from dihera.kube.key_annotations import AnnotationKeyStore
from dihera.server.idempotency import IdempotencyStore


def test_records_round_trip_through_an_annotation_value() -> None:
    records = {"k1": Record("fp", 100.0, 1.0, 200, {"changed": True}), "k2": Record("fp2", 50.0, 2.0)}
    assert decode(encode(records)) == records
    assert not decode(encode(records))["k2"].done


@pytest.mark.parametrize("text", [None, "", "not json", "[1, 2]", '{"k": {"unknown": 1}}'])
def test_an_unreadable_annotation_is_no_records(text: str | None) -> None:
    assert decode(text) == {}


def test_prune_drops_expired_records_and_keeps_the_newest_claims() -> None:
    records = {f"k{i}": Record("fp", expires=100.0 + i, claimed=float(i)) for i in range(10)}
    assert sorted(prune(records, now=104.5, size=100)) == ["k5", "k6", "k7", "k8", "k9"]
    assert sorted(prune(records, now=0.0, size=4)) == ["k7", "k8", "k9"]  # room for one more


def test_the_in_memory_store_answers_a_key_once_and_refuses_its_reuse() -> None:
    store, calls = IdempotencyStore(ttl=10, clock=lambda: 0.0), []

    def call() -> tuple[int, object]:
        calls.append(1)
        return 200, {"n": len(calls)}

    assert store.run("ns/j", "k", "fp", call) == (200, {"n": 1})
    assert store.run("ns/j", "k", "fp", call) == (200, {"n": 1})
    with pytest.raises(KeyReused, match="already used for a different request"):
        store.run("ns/j", "k", "other", call)
    assert len(calls) == 1


def test_server_errors_are_forgotten_so_a_retry_runs_again() -> None:
    store = IdempotencyStore(ttl=10)
    assert store.run("ns/j", "k", "fp", lambda: (503, "busy")) == (503, "busy")
    assert store.run("ns/j", "k", "fp", lambda: (200, "ok")) == (200, "ok")


def _scale_answer(added: int) -> dict[str, object]:
    """A scale's answer (ScaleOut's JSON) with ``added`` replica rows, as the di-server stores it."""
    row = {"name": "collector-0", "rank": 0, "task": "collector", "index": 0, "pod": None, "phase": None,
           "fqdn": "dqn-collector-0.di-dqn.team-a.svc.cluster.local"}  # fmt: skip
    return {"namespace": "team-a", "name": "dqn", "changed": True, "membershipGeneration": 7,
            "replicas": {"collector": added}, "added": [row] * added, "removed": []}  # fmt: skip


def test_an_answer_too_large_to_keep_is_kept_as_a_409_saying_it_was_done() -> None:
    small, large = _scale_answer(2), _scale_answer(1800)
    assert Record("fp", 1.0, 0.0).answer(200, small) == Record("fp", 1.0, 0.0, 200, small)
    kept = Record("fp", 1.0, 0.0).answer(200, large)
    assert kept.status == 409 and isinstance(kept.body, str)
    assert "already done (HTTP 200: membership generation 7, added 1800, removed 0) and is not done again" in kept.body
    assert len(encode({"k": kept})) < ANSWER_BYTES


class _Jobs:
    """One DIJob in memory, patched with JSON patches as the API server does: a stale resourceVersion gets 409,
    annotations over 256 KiB in all get 422 (what made a 1,800-replica answer fail to be stored)."""

    def __init__(self) -> None:
        self.body: dict[str, Any] = {"metadata": {"namespace": "team-a", "name": "dqn", "resourceVersion": "1"}}

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        return copy.deepcopy(self.body)

    def patch_namespaced_custom_object(self, *args: Any, **kwargs: Any) -> None:
        ops = args[5]
        if ops[0]["value"] != self.body["metadata"]["resourceVersion"]:
            raise ApiException(status=409, reason="Conflict")
        patched = jsonpatch.apply_patch(self.body, ops[1:])
        annotations = patched["metadata"].get("annotations") or {}
        if sum(len(k) + len(v) for k, v in annotations.items()) > 256 * 1024:
            raise ApiException(status=422, reason="Unprocessable Entity")
        patched["metadata"]["resourceVersion"] = str(int(self.body["metadata"]["resourceVersion"]) + 1)
        self.body = patched


def _annotation_store(jobs: _Jobs) -> AnnotationKeyStore:
    store = AnnotationKeyStore(client.ApiClient(), ttl=600)
    store._jobs = jobs  # type: ignore[assignment]
    store._custom = jobs  # type: ignore[assignment]
    return store


def test_a_retry_of_a_1800_replica_scale_on_the_dijob_is_answered_not_run_again() -> None:
    jobs, calls = _Jobs(), []

    def scale() -> tuple[int, object]:
        calls.append(1)
        return 200, _scale_answer(1800)

    store = _annotation_store(jobs)
    first = store.run("team-a/dqn", "k", "f" * 64, scale)
    assert first == (200, _scale_answer(1800))  # the first caller gets the whole answer
    again = store.run("team-a/dqn", "k", "f" * 64, scale)
    assert again[0] == 409 and "is not done again" in again[1]
    assert len(calls) == 1


def test_the_key_annotation_stays_bounded_with_every_record_at_its_largest() -> None:
    jobs = _Jobs()
    store = _annotation_store(jobs)
    for i in range(40):
        answer = (200, {"pad": "x" * (ANSWER_BYTES - 12)})  # just under the bound: kept whole
        assert store.run("team-a/dqn", f"{i:03d}" + "k" * 197, "f" * 64, lambda answer=answer: answer) == answer
    value = jobs.body["metadata"]["annotations"][ANNOTATION_IDEMPOTENCY]
    assert len(decode(value)) <= 32 and len(value) < 90 * 1024, len(value)  # 32 records of 2.3 KiB: 77 KB
