"""Server-side apply of the Kubernetes objects that come with a DIJob (a ConfigMap with its config...)."""

from __future__ import annotations

from collections.abc import Mapping

from kubernetes import client
from kubernetes.dynamic import DynamicClient

from dihera.objects import metadata

__all__ = ["FIELD_MANAGER", "apply_object"]

FIELD_MANAGER = "dihera-submit"


def apply_object(api: client.ApiClient, obj: Mapping[str, object], namespace: str) -> str:
    """Create or update ``obj`` as it is (server-side apply); returns ``kind namespace/name``.

    A namespaced object without ``metadata.namespace`` goes into ``namespace`` (the job's).
    Unknown kinds and refusals propagate (``ResourceNotFoundError``, ``ApiException``).
    """
    resource = DynamicClient(api).resources.get(  # type: ignore[no-untyped-call]
        api_version=obj["apiVersion"], kind=obj["kind"]
    )
    meta = metadata(obj)
    where = (meta.get("namespace") or namespace) if resource.namespaced else None
    resource.server_side_apply(
        body=dict(obj), name=meta.get("name"), namespace=where, field_manager=FIELD_MANAGER, force_conflicts=True
    )
    return f"{str(obj['kind']).lower()} {where + '/' if where else ''}{meta.get('name')}"
