"""Shared setup of the lifecycle tests on the local control plane: kwok annotations, reads, polls, edits.

Not a test module: tests/integration/test_controller_lifecycle*.py and test_rbac_audit.py import it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from kubernetes import client, watch

from dihera.kube.jobs import JobStore
from dihera.schema import GROUP, PLURAL, VERSION
from tests.integration.jobs import dijob_events, job_pods

__all__ = [
    "FOREVER",
    "StatusLog",
    "current_message",
    "has_event",
    "live_pods",
    "set_suspend",
    "status_where",
]

#: kwok annotation: the replica runs an hour (longer than any test).
FOREVER = {"sim.dihera.io/run-seconds": "3600"}


def live_pods(cluster: client.ApiClient, namespace: str, name: str) -> list[dict[str, Any]]:
    """The job's pods still Pending or Running and not being deleted."""
    return [
        p
        for p in job_pods(cluster, namespace, name)
        if p["status"].get("phase") in ("Pending", "Running") and not p["metadata"].get("deletionTimestamp")
    ]


def current_message(status: dict[str, Any]) -> str:
    """The message of the status' current (True) condition."""
    return next((str(c.get("message")) for c in status.get("conditions") or [] if c.get("status") == "True"), "")


def status_where(
    jobs: JobStore, namespace: str, name: str, check: Callable[[dict[str, Any]], Any]
) -> Callable[[], dict[str, Any] | None]:
    """A poll condition: the DIJob's status once ``check(status)`` is true, else None."""

    def poll() -> dict[str, Any] | None:
        status = ((jobs.get(namespace, name) or {}).get("status")) or {}
        return status if status and check(status) else None

    return poll


def has_event_reasons(
    cluster: client.ApiClient, namespace: str, name: str, reason: str
) -> Callable[[], list[str] | None]:
    """A poll condition: the reasons of the DIJob's Events once ``reason`` is among them, else None (Events
    are sent in the background, so one may land after the status that caused it)."""

    def poll() -> list[str] | None:
        reasons = [r for r, _ in dijob_events(cluster, namespace, name)]
        return reasons if reason in reasons else None

    return poll


def has_event(cluster: client.ApiClient, namespace: str, name: str, reason: str, *words: str) -> Callable[[], bool]:
    """A poll condition: an Event ``reason`` about the DIJob whose message holds every one of ``words``."""
    return lambda: any(r == reason and all(w in m for w in words) for r, m in dijob_events(cluster, namespace, name))


def set_suspend(api: client.ApiClient, namespace: str, name: str, suspend: bool) -> None:
    """``kubectl patch dijob NAME --type merge -p '{"spec":{"suspend":...}}'``."""
    client.CustomObjectsApi(api).patch_namespaced_custom_object(
        GROUP,
        VERSION,
        namespace,
        PLURAL,
        name,
        {"spec": {"suspend": suspend}},
        _content_type="application/merge-patch+json",
    )


class StatusLog:
    """Every status the DIJob had while :meth:`watching` (a watch: no version is missed between polls)."""

    def __init__(self, api: client.ApiClient, namespace: str, name: str) -> None:
        self._api, self._namespace, self._name = api, namespace, name
        self.statuses: list[dict[str, Any]] = []
        self._stopped = False
        self._error: Exception | None = None

    @contextmanager
    def watching(self) -> Iterator[StatusLog]:
        w = watch.Watch()
        custom = client.CustomObjectsApi(self._api)

        def run() -> None:
            try:
                for event in w.stream(
                    custom.list_namespaced_custom_object,
                    GROUP,
                    VERSION,
                    self._namespace,
                    PLURAL,
                    field_selector=f"metadata.name={self._name}",
                    timeout_seconds=600,
                ):
                    status = event["object"].get("status")
                    if status:
                        self.statuses.append(status)
            except Exception as err:  # the stream ends with the test's namespace: only an earlier end counts
                if not self._stopped:
                    self._error = err

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._stopped = True
            w.stop()

    def find(self, check: Callable[[dict[str, Any]], Any]) -> dict[str, Any] | None:
        """The first status seen for which ``check`` is true (an error if the watch ended early)."""
        if self._error is not None:
            raise AssertionError(f"the watch of DIJob {self._name} ended while watching: {self._error}")
        return next((s for s in self.statuses if check(s)), None)
