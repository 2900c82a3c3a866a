"""Kubernetes Events about a DIJob (what ``kubectl describe dijob`` shows).

Events are best-effort, as in kopf: one that cannot be posted (namespace being deleted, quota,
permission) is logged and dropped, so it never fails or repeats the reconcile that made it.
"""

from __future__ import annotations

import datetime as dt
import logging
import uuid
from collections.abc import Mapping
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from dihera.constants import FIELD_MANAGER_CONTROLLER
from dihera.kube.errors import describe_api_error

__all__ = ["EventRecorder"]

log = logging.getLogger("dihera.controller")


class EventRecorder:
    """Posts core/v1 Events whose involvedObject is a DIJob."""

    def __init__(self, api: client.ApiClient, component: str = FIELD_MANAGER_CONTROLLER) -> None:
        self._core = client.CoreV1Api(api)
        self._component = component

    def post(self, job: Mapping[str, Any], type_: str, reason: str, message: str) -> bool:
        """Post one Event; False (logged) when the API server refused it."""
        meta = job["metadata"]
        now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{meta['name']}.{uuid.uuid4().hex[:16]}", "namespace": meta["namespace"]},
            "involvedObject": {
                "apiVersion": job["apiVersion"],
                "kind": job["kind"],
                "name": meta["name"],
                "namespace": meta["namespace"],
                "uid": meta.get("uid"),
                "resourceVersion": meta.get("resourceVersion"),
            },
            "type": type_,
            "reason": reason,
            "message": message[:1000],
            "source": {"component": self._component},
            "reportingComponent": self._component,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        try:
            self._core.create_namespaced_event(meta["namespace"], body, _preload_content=False)  # type: ignore[arg-type]
        except ApiException as err:
            terminating = err.status == 403 and "being terminated" in str(err.body or "")
            (log.debug if terminating or err.status == 404 else log.error)(
                "event %s not posted: %s",
                reason,
                describe_api_error(err),
                extra={"job": f"{meta['namespace']}/{meta['name']}"},
            )
            return False
        return True
