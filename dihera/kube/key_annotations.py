"""Idempotency keys kept on the DIJob, so that every di-server replica sees every key.

The records (:mod:`dihera.key_records` decides their format and bounds) live in the DIJob's
annotation ``diengine/idempotency-keys``. Every write is a JSON patch carrying the resourceVersion
it was computed from: two replicas claiming the same key cannot both win (the loser reads the
winner's claim and waits for its answer).

A request runs in three steps: claim the key (a record without an answer) → scale → store the
answer (or drop the claim when the scale failed with a server error, so a retry may run it). A claim
older than ``stale`` seconds belongs to a replica that died mid-request and is taken over.

Storing an answer never fails for its size (:mod:`dihera.key_records` bounds every record); it is tried
again after each lost resourceVersion race for up to ``wait`` seconds (a DIJob whose status is written in a
tight loop loses many), so the claim is settled before it could be taken for a dead replica's.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Mapping

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from dihera.constants import ANNOTATION_IDEMPOTENCY, FIELD_MANAGER_SERVER
from dihera.key_records import Answer, KeyBusy, KeyReused, Record, decode, encode, prune
from dihera.kube.jobs import JobStore
from dihera.objects import metadata
from dihera.patches import PatchOp, pointer, precondition
from dihera.schema import GROUP, PLURAL, VERSION

__all__ = ["AnnotationKeyStore"]

JSON_PATCH = "application/json-patch+json"
log = logging.getLogger(__name__)


class AnnotationKeyStore:
    """:class:`dihera.server.idempotency.KeyStore` on the DIJob's annotations."""

    def __init__(
        self,
        api: client.ApiClient,
        ttl: float,
        size: int = 32,
        stale: float = 120.0,
        wait: float = 30.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._jobs = JobStore(api)
        self._custom = client.CustomObjectsApi(api)
        self._ttl, self._size, self._stale, self._wait, self._clock = ttl, size, stale, wait, clock

    def run(self, job: str, key: str, fingerprint: str, call: Callable[[], Answer]) -> Answer:
        namespace, _, name = job.partition("/")
        found = self._claim(namespace, name, key, fingerprint)
        if found is not None:
            return found
        try:
            status, body = call()
        except BaseException:
            self._settle(namespace, name, key, None)
            raise
        self._settle(namespace, name, key, (status, body) if status < 500 else None)
        return status, body

    def _claim(self, namespace: str, name: str, key: str, fingerprint: str) -> Answer | None:
        """Claim ``key`` (None), or the answer a request with it already got."""
        deadline = time.monotonic() + self._wait
        while True:
            body = self._jobs.get(namespace, name)
            if body is None:
                return None  # no job: the request itself answers 404, nothing to remember it on
            now = self._clock()
            records = prune(_records(body), now, self._size)
            mine = records.get(key)
            if mine is not None:
                if mine.fingerprint != fingerprint:
                    raise KeyReused(f"Idempotency-Key {key!r} was already used for a different request on this job")
                if mine.done:
                    return mine.status or 500, mine.body
                if mine.claimed + self._stale > now:
                    if time.monotonic() >= deadline:
                        raise KeyBusy(f"a request with Idempotency-Key {key!r} is still in progress; retry later")
                    time.sleep(0.2)
                    continue
            records[key] = Record(fingerprint, now + self._ttl, now)
            if self._write(body, records):
                return None

    def _settle(self, namespace: str, name: str, key: str, answer: tuple[int, object] | None) -> None:
        """Store the answer of ``key`` (None: forget the key) on the latest DIJob, again after each lost race for
        up to ``wait`` seconds."""
        deadline = time.monotonic() + self._wait
        while True:
            body = self._jobs.get(namespace, name)
            if body is None:
                return
            records = prune(_records(body), self._clock(), self._size + 1)
            mine = records.pop(key, None)
            if mine is not None and answer is not None:
                records[key] = mine.answer(*answer)
            if self._write(body, records):
                return
            if time.monotonic() >= deadline:
                log.error("Idempotency-Key %r of DIJob %s/%s: answer not stored (lost each race)", key, namespace, name)
                return
            time.sleep(random.uniform(0, 0.05))

    def _write(self, body: Mapping[str, object], records: dict[str, Record]) -> bool:
        """Replace the records if the DIJob is unchanged since ``body`` was read; False on a 409."""
        meta = metadata(body)
        ops: list[PatchOp] = [precondition(body)]
        if meta.get("annotations") is None:
            ops.append({"op": "add", "path": "/metadata/annotations", "value": {}})
        path = f"/metadata/annotations/{pointer(ANNOTATION_IDEMPOTENCY)}"
        ops.append({"op": "add", "path": path, "value": encode(records)})
        try:
            self._custom.patch_namespaced_custom_object(
                GROUP,
                VERSION,
                meta["namespace"],
                PLURAL,
                meta["name"],
                [dict(op) for op in ops],
                field_manager=FIELD_MANAGER_SERVER,
                _content_type=JSON_PATCH,
            )
        except ApiException as err:
            if err.status == 404:
                return True  # a job gone has nothing to remember
            if err.status == 409:
                return False
            raise
        return True


def _records(body: Mapping[str, object]) -> dict[str, Record]:
    return decode(metadata(body).get("annotations", {}).get(ANNOTATION_IDEMPOTENCY))
