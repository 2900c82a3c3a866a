"""Record the profiling data a job reports (``status.profilings`` of its DIJob) for the di-server."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from dihera.schema import GROUP, PLURAL, VERSION

__all__ = ["write_profilings"]


def write_profilings(api: client.ApiClient, namespace: str, name: str, data: Mapping[str, Any]) -> bool:
    """Merge ``data`` into ``status.profilings`` (a JSON merge patch); False when the DIJob does not exist."""
    custom = client.CustomObjectsApi(api)
    try:
        custom.patch_namespaced_custom_object_status(
            GROUP, VERSION, namespace, PLURAL, name, {"status": {"profilings": dict(data)}}
        )
    except ApiException as err:
        if err.status == 404:
            return False
        raise
    return True
