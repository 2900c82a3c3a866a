"""Kueue on the local control plane: its manager admits a hand-written Workload within the ClusterQueue's
quota, keeps a second one that does not fit pending (saying so), and admits it once the first is deleted.
Every Workload and queue object passes Kueue's own webhooks, registered on loopback (ci/devcluster/kueue.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.integration.conftest import Poll
from tests.integration.kueue import GROUP, VERSION, Queues, condition, custom, workload

pytestmark = [pytest.mark.cluster, pytest.mark.exclusive]


def _status_true(obj: dict[str, Any], kind: str) -> bool:
    cond = condition(obj, kind)
    return cond is not None and cond["status"] == "True"


def test_workloads_are_admitted_whole_within_the_quota(
    cluster: client.ApiClient, namespace: str, kueue_queues: Callable[..., Queues], poll: Poll
) -> None:
    queues = kueue_queues(cpu="3")
    objects = custom(cluster)

    def create(name: str) -> None:
        body = workload(name, queues.local_queue, {"workers": (2, "1")})  # 2 pods x 1 CPU
        objects.create_namespaced_custom_object(GROUP, VERSION, namespace, "workloads", body)

    def get(name: str) -> dict[str, Any] | None:
        try:
            found: dict[str, Any] = objects.get_namespaced_custom_object(GROUP, VERSION, namespace, "workloads", name)
        except ApiException as err:
            if err.status == 404:
                return None
            raise
        return found

    def admitted(name: str) -> dict[str, Any] | None:
        wl = get(name)
        return wl if wl and wl.get("status", {}).get("admission") and _status_true(wl, "Admitted") else None

    create("first")
    first = poll(lambda: admitted("first"), 60, "Workload first admitted")
    admission = first["status"]["admission"]
    assert admission["clusterQueue"] == queues.cluster_queue
    (assignment,) = admission["podSetAssignments"]
    assert assignment["name"] == "workers" and assignment["count"] == 2
    assert assignment["flavors"] == {"cpu": queues.flavor}
    assert assignment["resourceUsage"]["cpu"] == "2"
    assert _status_true(first, "QuotaReserved")

    # 2 of the 3 CPUs are taken: a second Workload of 2 x 1 CPU waits, whole, with Kueue's reason.
    create("second")

    def pending() -> dict[str, Any] | None:
        wl = get("second")
        reserved = condition(wl, "QuotaReserved") if wl else None
        return reserved if reserved and reserved["status"] == "False" and reserved.get("message") else None

    reserved = poll(pending, 60, "Workload second pending with a QuotaReserved=False message")
    assert "insufficient" in reserved["message"] and "cpu" in reserved["message"], reserved
    second = get("second")
    assert second is not None and "admission" not in second.get("status", {})
    assert not _status_true(second, "Admitted")

    # The first one gone, its quota goes to the second.
    objects.delete_namespaced_custom_object(GROUP, VERSION, namespace, "workloads", "first")
    poll(lambda: get("first") is None, 60, "Workload first deleted (Kueue removes its finalizer)")
    second = poll(lambda: admitted("second"), 60, "Workload second admitted after first was deleted")
    assert second["status"]["admission"]["podSetAssignments"][0]["count"] == 2
