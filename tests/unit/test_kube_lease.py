"""Leader election on a Lease (dihera/kube/lease.py) over an in-memory Lease API: one holder at a time, a
graceful stop hands the Lease over at once, a holder that cannot renew stops leading before another takes
over (real threads and timers: ~8 s)."""

from __future__ import annotations

import copy
import json
import threading
import time
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from dihera.kube.lease import LeaderElector


class Leases:
    """``coordination.k8s.io/v1`` Leases in memory, with the API server's optimistic concurrency."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.leases: dict[tuple[str, str], client.V1Lease] = {}
        self.version = 0
        self.unreachable: set[str] = set()  # identities whose requests fail (a network cut)

    def api(self, identity: str) -> Any:
        leases = self

        class Api:
            def _check(self) -> None:
                if identity in leases.unreachable:
                    raise ApiException(status=503, reason="unreachable")

            def read_namespaced_lease(self, name: str, namespace: str) -> client.V1Lease:
                self._check()
                with leases.lock:
                    if (namespace, name) not in leases.leases:
                        raise ApiException(http_resp=_NotFound())
                    return copy.deepcopy(leases.leases[namespace, name])

            def create_namespaced_lease(self, namespace: str, body: client.V1Lease) -> client.V1Lease:
                self._check()
                with leases.lock:
                    name = body.metadata["name"] if isinstance(body.metadata, dict) else body.metadata.name
                    if (namespace, name) in leases.leases:
                        raise ApiException(status=409, reason="AlreadyExists")
                    leases.version += 1
                    body.metadata = client.V1ObjectMeta(name=name, resource_version=str(leases.version))
                    leases.leases[namespace, name] = copy.deepcopy(body)
                    return copy.deepcopy(body)

            def replace_namespaced_lease(self, name: str, namespace: str, body: client.V1Lease) -> client.V1Lease:
                self._check()
                with leases.lock:
                    current = leases.leases[namespace, name]
                    if body.metadata.resource_version != current.metadata.resource_version:
                        raise ApiException(status=409, reason="Conflict")
                    leases.version += 1
                    body.metadata.resource_version = str(leases.version)
                    leases.leases[namespace, name] = copy.deepcopy(body)
                    return copy.deepcopy(body)

        return Api()

    def holder(self) -> str | None:
        with self.lock:
            lease = self.leases.get(("ns", "lease"))
            return None if lease is None or lease.spec is None else lease.spec.holder_identity


class _NotFound:
    status, reason, data, headers = 404, "Not Found", json.dumps({"code": 404}).encode(), {}

    def getheaders(self) -> dict[str, str]:
        return {}


def elector(leases: Leases, identity: str, stopped: list[str]) -> LeaderElector:
    e = LeaderElector(
        client.ApiClient(),
        "ns",
        "lease",
        identity,
        on_started=lambda: None,
        on_stopped=lambda: stopped.append(identity),
        lease_seconds=3,
        renew_seconds=2,
        retry_seconds=1,
    )
    e._lock.api_instance = leases.api(identity)
    return e


def wait_for(predicate: Any, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_one_holder_a_graceful_release_hands_over_and_a_cut_off_holder_steps_down() -> None:
    leases, stopped = Leases(), []  # type: ignore[var-annotated]
    a, b = elector(leases, "a", stopped), elector(leases, "b", stopped)
    a.start()
    assert wait_for(lambda: a.leading, 3) and leases.holder() == "a"
    b.start()
    time.sleep(2.5)  # b tries every second; a renews every second
    assert a.leading and not b.leading and leases.holder() == "a"
    released_at = time.monotonic()
    assert a.release() and not a.leading
    assert wait_for(lambda: b.leading, 3) and leases.holder() == "b"
    assert time.monotonic() - released_at < 2.5  # at once (a retry period), not after the lease (3 s)
    leases.unreachable.add("b")  # b can no longer renew: it steps down within its renew deadline
    assert wait_for(lambda: stopped == ["b"], 5) and not b.leading
    assert stopped == ["b"]  # a gave the Lease up on purpose: not reported as lost


def test_impossible_timing_is_refused() -> None:
    with pytest.raises(ValueError, match="lease > renew deadline"):
        LeaderElector(client.ApiClient(), "ns", "l", "i", lambda: None, lambda: None, 10, 10, 2)
