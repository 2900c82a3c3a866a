"""Reads and writes of Kueue objects for queued DIJobs: Workloads, their status, ResourceFlavors and
WorkloadPriorityClasses (docs/queueing.md). What to write is decided in :mod:`dihera.queueing`.

Every call names the object in its errors; "already exists" and "not found" are answers, not errors.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from dihera.constants import FIELD_MANAGER_CONTROLLER, KUEUE_GROUP, KUEUE_VERSION
from dihera.kube.jobs import StatusConflict

__all__ = ["WORKLOAD_PLURAL", "KueueObjectMissing", "WorkloadStore"]

WORKLOAD_PLURAL = "workloads"
JSON_PATCH = "application/json-patch+json"


class KueueObjectMissing(LookupError):
    """A Kueue object the job needs does not exist (a WorkloadPriorityClass the settings name)."""


def _as_dict(obj: object) -> dict[str, Any]:
    return cast(dict[str, Any], obj)


class WorkloadStore:
    """Typed access to Kueue's API (``kueue.x-k8s.io/v1beta2``) through one API client (no I/O until called)."""

    def __init__(self, api: client.ApiClient) -> None:
        self._custom = client.CustomObjectsApi(api)

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            obj = self._custom.get_namespaced_custom_object(
                KUEUE_GROUP, KUEUE_VERSION, namespace, WORKLOAD_PLURAL, name
            )
        except ApiException as err:
            if err.status == 404:
                return None
            raise
        return _as_dict(obj)

    def list(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        resp = self._custom.list_namespaced_custom_object(
            KUEUE_GROUP, KUEUE_VERSION, namespace, WORKLOAD_PLURAL, label_selector=selector
        )
        items: list[dict[str, Any]] = _as_dict(resp).get("items") or []
        return items

    def create(self, workload: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
        """``(workload, created)``; one that already exists is read back."""
        meta = workload["metadata"]
        try:
            created = self._custom.create_namespaced_custom_object(
                KUEUE_GROUP, KUEUE_VERSION, meta["namespace"], WORKLOAD_PLURAL, dict(workload)
            )
        except ApiException as err:
            if err.status != 409:
                raise
            found = self.get(meta["namespace"], meta["name"])
            if found is None:
                raise RuntimeError(f"Workload {meta['namespace']}/{meta['name']} exists but cannot be read") from err
            return found, False
        return _as_dict(created), True

    def patch_status(self, namespace: str, name: str, ops: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
        """A JSON patch of ``workloads/status`` (with its own resourceVersion test): the Workload as written,
        None when it is gone, :class:`StatusConflict` when it changed since it was read."""
        try:
            written = self._custom.patch_namespaced_custom_object_status(
                KUEUE_GROUP,
                KUEUE_VERSION,
                namespace,
                WORKLOAD_PLURAL,
                name,
                [dict(op) for op in ops],
                field_manager=FIELD_MANAGER_CONTROLLER,
                _content_type=JSON_PATCH,
            )
        except ApiException as err:
            if err.status == 404:
                return None
            if err.status == 409 or (err.status == 422 and "test" in str(err.body or "")):
                raise StatusConflict(f"Workload {namespace}/{name} changed since it was read") from err
            raise
        return _as_dict(written)

    def delete(self, namespace: str, name: str) -> bool:
        """Delete a Workload (its quota is released); False when it was already gone."""
        try:
            self._custom.delete_namespaced_custom_object(KUEUE_GROUP, KUEUE_VERSION, namespace, WORKLOAD_PLURAL, name)
        except ApiException as err:
            if err.status == 404:
                return False
            raise
        return True

    def resource_flavor(self, name: str) -> dict[str, Any] | None:
        try:
            obj = self._custom.get_cluster_custom_object(KUEUE_GROUP, KUEUE_VERSION, "resourceflavors", name)
        except ApiException as err:
            if err.status == 404:
                return None
            raise
        return _as_dict(obj)

    def priority_value(self, name: str) -> int:
        """The value of WorkloadPriorityClass ``name``; :class:`KueueObjectMissing` when there is none."""
        try:
            obj = self._custom.get_cluster_custom_object(KUEUE_GROUP, KUEUE_VERSION, "workloadpriorityclasses", name)
        except ApiException as err:
            if err.status == 404:
                raise KueueObjectMissing(
                    f"WorkloadPriorityClass {name!r} does not exist (the chart's kueue.priorityClasses create "
                    "them; or create it, or map spec.priority to another with --kueue-priority-classes)"
                ) from err
            raise
        return int(_as_dict(obj).get("value") or 0)
