"""Reads and writes of DIJob objects: get, create (submit), status write, and waiting for a phase."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import cast

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from dihera.constants import FIELD_MANAGER_CONTROLLER, TERMINAL_PHASES
from dihera.objects import metadata
from dihera.schema import GROUP, PLURAL, VERSION
from dihera.shapes.dijob import DIJobObject, as_dijob

__all__ = ["TERMINAL_PHASES", "JobStore", "StatusConflict", "WaitTimeout"]


class WaitTimeout(TimeoutError):
    """The job did not reach the wanted phase in time; ``last`` is the last status seen."""

    def __init__(self, job: str, phase: str, timeout: float, last: Mapping[str, object]) -> None:
        self.last = dict(last)
        super().__init__(
            f"DIJob {job} did not reach phase {phase} within {timeout:g}s (last phase: {last.get('phase') or '-'})"
        )


class StatusConflict(Exception):
    """The DIJob changed since it was read (another writer), or is another object of the name now (deleted and
    created again): read it again and recompute the status."""


def _tested_uid(ops: Sequence[Mapping[str, object]]) -> str | None:
    """The uid a JSON patch's ``test`` of ``/metadata/uid`` asks for (None: no such test)."""
    tests = (op for op in ops if op.get("op") == "test" and op.get("path") == "/metadata/uid")
    return next((str(op["value"]) for op in tests), None)


class JobStore:
    """DIJob objects through the Kubernetes API (custom objects, status subresource)."""

    def __init__(self, api: client.ApiClient) -> None:
        self._custom = client.CustomObjectsApi(api)

    def get(self, namespace: str, name: str) -> DIJobObject | None:
        """The DIJob as served (its typed view), or None when there is none."""
        try:
            obj = self._custom.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)
        except ApiException as err:
            if err.status == 404:
                return None
            raise
        return as_dijob(cast(dict[str, object], obj))

    def create(self, manifest: Mapping[str, object]) -> DIJobObject:
        """Create a DIJob; the API server's validation errors (CEL rules name the field) propagate as ApiException."""
        namespace = metadata(manifest).get("namespace") or "default"
        created = self._custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, dict(manifest))
        return as_dijob(cast(dict[str, object], created))

    def delete(self, namespace: str, name: str, uid: str | None = None) -> bool:
        """Delete a DIJob (gone already is fine); with ``uid``, only that object, and in the foreground.

        ``uid`` is what ``ttlSecondsAfterFinished`` uses, as Kubernetes' TTL controller does: a DIJob
        recreated under the same name is not deleted (409), and the DIJob stays visible, with a
        deletionTimestamp, until the garbage collector has deleted what it owns. True when deleted here.
        """
        body = None
        if uid is not None:
            only = client.V1Preconditions(uid=uid)
            body = client.V1DeleteOptions(propagation_policy="Foreground", preconditions=only)
        try:
            self._custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name, body=body)
        except ApiException as err:
            if err.status not in (404, 409):
                raise
            return False
        return True

    def _uid(self, namespace: str, name: str) -> str | None:
        body = self.get(namespace, name)
        return None if body is None else str(metadata(body).get("uid"))

    def suspend(self, namespace: str, name: str) -> bool:
        """Set ``spec.suspend: true`` (a JSON merge patch); False when the DIJob is gone."""
        try:
            patch = {"spec": {"suspend": True}}
            self._custom.patch_namespaced_custom_object(
                GROUP, VERSION, namespace, PLURAL, name, patch, field_manager=FIELD_MANAGER_CONTROLLER
            )
        except ApiException as err:
            if err.status == 404:
                return False
            raise
        return True

    def patch_status(self, namespace: str, name: str, ops: Sequence[Mapping[str, object]]) -> dict[str, object]:
        """Apply a JSON patch to the status subresource; the DIJob as written, or :class:`StatusConflict` when a
        precondition in it failed.

        The controller's patches (:func:`dihera.controller.decide.status.status_patch`) touch only the fields
        it owns, so another writer's fields (the di-server's ``status.profilings``) are never overwritten, and
        test the DIJob's uid first: a DIJob deleted and created again under the name since it was read refuses
        the patch, a conflict as well. The API server answers a failed ``test`` with a bare 422 (Invalid, no
        details: measured on kube-apiserver 1.37), so a 422 is told apart from other refusals by reading the
        DIJob's uid again (one GET, on that error only).
        """
        try:
            written = self._custom.patch_namespaced_custom_object_status(
                GROUP,
                VERSION,
                namespace,
                PLURAL,
                name,
                [dict(op) for op in ops],
                field_manager=FIELD_MANAGER_CONTROLLER,
                _content_type="application/json-patch+json",
            )
        except ApiException as err:
            if err.status == 409:
                raise StatusConflict(f"DIJob {namespace}/{name} changed since it was read") from err
            uid = _tested_uid(ops)
            if err.status == 422 and uid is not None and self._uid(namespace, name) != uid:
                why = f"DIJob {namespace}/{name} is not the object read (uid {uid}): deleted and created again"
                raise StatusConflict(why) from err
            raise
        return cast(dict[str, object], written)

    def wait_for_phase(
        self,
        namespace: str,
        name: str,
        phase: str,
        timeout: float,
        progress: Callable[[Mapping[str, object]], None] | None = None,
        interval: float = 1.0,
    ) -> dict[str, object]:
        """Poll until the job's phase is ``phase`` (or terminal); return its status.

        ``progress`` is called with the status each time it changes. Raises :class:`WaitTimeout`
        after ``timeout`` seconds, and :class:`RuntimeError` if the job ends in another terminal phase.
        """
        deadline = time.monotonic() + timeout
        last: dict[str, object] = {}
        while True:
            obj = self.get(namespace, name)
            status = dict(_mapping((obj or {}).get("status")))
            if status != last and progress is not None:
                progress(status)
            last = status
            current = status.get("phase")
            if current == phase:
                return status
            if current in TERMINAL_PHASES:
                raise RuntimeError(f"DIJob {namespace}/{name} ended {current}, not {phase}: {_message(status)}")
            if obj is None:
                raise RuntimeError(f"DIJob {namespace}/{name} no longer exists")
            if time.monotonic() >= deadline:
                raise WaitTimeout(f"{namespace}/{name}", phase, timeout, status)
            time.sleep(interval)


def _mapping(value: object) -> Mapping[str, object]:
    return cast(Mapping[str, object], value) if isinstance(value, Mapping) else {}


def _message(status: Mapping[str, object]) -> str:
    """The phase's condition's message (other conditions, collector autoscaling's, may be True too)."""
    conditions = status.get("conditions")
    for cond in map(_mapping, conditions if isinstance(conditions, list) else []):
        if cond.get("status") == "True" and cond.get("type") == status.get("phase"):
            return str(cond.get("message") or cond.get("reason") or "")
    return ""
