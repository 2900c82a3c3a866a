"""Idempotency-Key records: round trip, expiry, a bounded number per job, and the in-memory store."""

from __future__ import annotations

import pytest

from dihera.key_records import KeyReused, Record, decode, encode, prune
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
