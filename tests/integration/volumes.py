"""PersistentVolumes for checkpoint claims on the simulated nodes (static provisioning: they run no provisioner),
and reading a job's claim. The ``storage_class`` fixture (conftest.py) uses them."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from dihera.naming import checkpoint_claim_name

__all__ = ["claim", "static_volumes"]


@contextmanager
def static_volumes(api: client.ApiClient, storage_class: str, count: int = 2) -> Iterator[str]:
    """``count`` PersistentVolumes (1Gi, ReadWriteOnce, hostPath, Retain) of ``storage_class``, deleted afterwards."""
    core = client.CoreV1Api(api)
    names = [f"{storage_class}-{i}" for i in range(count)]
    for pv in names:
        core.create_persistent_volume(
            {
                "metadata": {"name": pv},
                "spec": {
                    "capacity": {"storage": "1Gi"},
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": storage_class,
                    "persistentVolumeReclaimPolicy": "Retain",
                    "hostPath": {"path": f"/tmp/dihera-test-pv/{pv}"},
                },
            }
        )
    try:
        yield storage_class
    finally:
        for pv in names:
            try:
                core.delete_persistent_volume(pv)
            except ApiException as err:
                if err.status != 404:
                    raise


def claim(api: client.ApiClient, namespace: str, job: str) -> dict[str, Any] | None:
    """The job's checkpoint claim as the API server has it, or None."""
    try:
        found = client.CoreV1Api(api).read_namespaced_persistent_volume_claim(checkpoint_claim_name(job), namespace)
    except ApiException as err:
        if err.status == 404:
            return None
        raise
    return client.ApiClient().sanitize_for_serialization(found)  # type: ignore[no-any-return]
