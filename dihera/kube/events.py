"""Kubernetes Events about a DIJob (what ``kubectl describe dijob`` shows).

Events are best-effort, as in kopf: one that cannot be posted (namespace being deleted, quota,
permission) is logged and dropped, so it never fails or repeats the reconcile that made it.

Once :meth:`EventRecorder.start` ran, Events are sent in the background, as client-go's event
broadcaster does: :meth:`EventRecorder.post` queues the Event and returns, and one thread sends them
in the order they were posted. A reconcile then no longer waits for a round trip per Event (a new job
posts JobPending before its Workflow is created). Nothing is dropped for speed: when the backlog is full
(:data:`BACKLOG`), the caller sends its Event itself, and :meth:`EventRecorder.close` sends what is
left before the controller exits.
"""

from __future__ import annotations

import datetime as dt
import logging
import queue
import threading
import uuid
from collections.abc import Callable, Mapping
from typing import TypedDict

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from dihera.constants import FIELD_MANAGER_CONTROLLER
from dihera.kube.errors import describe_api_error
from dihera.kube.responses import discard
from dihera.objects import metadata

__all__ = ["BACKLOG", "EventRecorder"]

log = logging.getLogger("dihera.controller")

#: Events queued for the sender at most; past that, :meth:`EventRecorder.post` sends in the caller's thread.
BACKLOG = 1000


class _EventMeta(TypedDict):
    name: str
    namespace: str


class _InvolvedObject(TypedDict):
    apiVersion: str
    kind: str
    name: str
    namespace: str
    uid: str | None
    resourceVersion: str | None


class _Source(TypedDict):
    component: str


class _Event(TypedDict):
    """A core/v1 Event as posted."""

    apiVersion: str
    kind: str
    metadata: _EventMeta
    involvedObject: _InvolvedObject
    type: str
    reason: str
    message: str
    source: _Source
    reportingComponent: str
    firstTimestamp: str
    lastTimestamp: str
    count: int


class EventRecorder:
    """Posts core/v1 Events whose involvedObject is a DIJob.

    ``on_posted`` is called after each Event the API server accepted (the writes counter).
    """

    def __init__(
        self,
        api: client.ApiClient,
        component: str = FIELD_MANAGER_CONTROLLER,
        on_posted: Callable[[], None] | None = None,
        backlog: int = BACKLOG,
    ) -> None:
        self._core = client.CoreV1Api(api)
        self._component = component
        self._on_posted = on_posted
        self._backlog: queue.Queue[_Event | None] = queue.Queue(maxsize=backlog)
        self._sender: threading.Thread | None = None

    def start(self) -> None:
        """Send Events in the background from now on (before: :meth:`post` sends them itself)."""
        if self._sender is None:
            self._sender = threading.Thread(target=self._send_all, name="dihera-events", daemon=True)
            self._sender.start()

    def close(self, timeout: float = 10.0) -> None:
        """Send the Events still queued (for up to ``timeout`` seconds), then stop the sender."""
        sender, self._sender = self._sender, None
        if sender is None:
            return
        try:
            self._backlog.put(None, timeout=timeout)
        except queue.Full:
            log.warning("%d event(s) not posted: the controller is stopping", self._backlog.qsize())
            return
        sender.join(timeout)

    def post(self, job: Mapping[str, object], type_: str, reason: str, message: str) -> None:
        """Post one Event: queued for the sender once started, else (or when the backlog is full) sent now."""
        body = self._event(job, type_, reason, message)
        if self._sender is not None:
            try:
                self._backlog.put_nowait(body)
                return
            except queue.Full:
                pass  # the sender is behind: this caller waits for its own Event instead of dropping it
        self._send(body)

    def _send_all(self) -> None:
        while (body := self._backlog.get()) is not None:
            self._send(body)

    def _event(self, job: Mapping[str, object], type_: str, reason: str, message: str) -> _Event:
        meta = metadata(job)
        now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{meta['name']}.{uuid.uuid4().hex[:16]}", "namespace": meta["namespace"]},
            "involvedObject": {
                "apiVersion": str(job["apiVersion"]),
                "kind": str(job["kind"]),
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

    def _send(self, body: _Event) -> None:
        involved = body["involvedObject"]
        try:
            discard(self._core.create_namespaced_event(involved["namespace"], body, _preload_content=False))  # type: ignore[arg-type]
        except ApiException as err:
            terminating = err.status == 403 and "being terminated" in str(err.body or "")
            (log.debug if terminating or err.status == 404 else log.error)(
                "event %s not posted: %s",
                body["reason"],
                describe_api_error(err),
                extra={"job": f"{involved['namespace']}/{involved['name']}"},
            )
            return
        except Exception:  # the sender thread must outlive any one Event: logged, dropped
            log.exception("event %s not posted", body["reason"])
            return
        if self._on_posted is not None:
            self._on_posted()
