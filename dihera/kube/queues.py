"""The reads and the one write shrink before eviction needs (docs/queueing.md, "Shrink before eviction"): a
LocalQueue's ClusterQueue, the ClusterQueue's quota and reservations, and the DIJob annotation that remembers
the collectors a shrunk job grows back to. What to do with them is decided in :mod:`dihera.queueing.shrink`.

Kept apart from :mod:`dihera.kube.workloads` (the Workloads of jobs) because these are Kueue's queue objects,
read only by the controller, and the annotation write is the DIJob's.
"""

from __future__ import annotations

from typing import Any, cast

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from dihera.constants import FIELD_MANAGER_CONTROLLER, KUEUE_GROUP, KUEUE_VERSION
from dihera.schema import GROUP, PLURAL, VERSION

__all__ = ["QueueStore"]


class QueueStore:
    """LocalQueues and ClusterQueues (``kueue.x-k8s.io/v1beta2``) and a DIJob's annotation, through one API
    client (no I/O until called). "Not found" is an answer (None), not an error."""

    def __init__(self, api: client.ApiClient) -> None:
        self._custom = client.CustomObjectsApi(api)

    def local_queue(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            found = self._custom.get_namespaced_custom_object(
                KUEUE_GROUP, KUEUE_VERSION, namespace, "localqueues", name
            )
        except ApiException as err:
            if err.status == 404:
                return None
            raise
        return cast(dict[str, Any], found)

    def cluster_queue(self, name: str) -> dict[str, Any] | None:
        try:
            found = self._custom.get_cluster_custom_object(KUEUE_GROUP, KUEUE_VERSION, "clusterqueues", name)
        except ApiException as err:
            if err.status == 404:
                return None
            raise
        return cast(dict[str, Any], found)

    def annotate_job(self, namespace: str, name: str, key: str, value: str | None) -> bool:
        """Set (``value``) or remove (None) one annotation of a DIJob; False when the job is gone. A merge
        patch of that key alone: the spec, the status and every other annotation are left as they are."""
        body = {"metadata": {"annotations": {key: value}}}
        try:
            self._custom.patch_namespaced_custom_object(
                GROUP, VERSION, namespace, PLURAL, name, body, field_manager=FIELD_MANAGER_CONTROLLER,
                _content_type="application/merge-patch+json",
            )  # fmt: skip
        except ApiException as err:
            if err.status == 404:
                return False
            raise
        return True
