"""Write a DIJob's ``status.training`` for the di-server (dihera/server/training.py decides when and what).

One JSON patch of the status subresource: ``test`` the DIJob's uid (the object the reports were checked
against: a DIJob deleted and created again under the name refuses it), then ``add`` ``/status/training``
whole. No resourceVersion precondition, as the controller's own status writes (its patches touch only the
fields it owns, so neither write undoes the other; docs/training-figures.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from dihera.constants import FIELD_MANAGER_SERVER
from dihera.schema import GROUP, PLURAL, VERSION
from dihera.shapes.dijob import DIJobObject, as_dijob

__all__ = ["first_status_patch", "training_patch", "write_training"]


def training_patch(uid: str, training: Mapping[str, object]) -> list[dict[str, object]]:
    """The JSON patch: the uid tested, then ``status.training`` replaced whole."""
    return [
        {"op": "test", "path": "/metadata/uid", "value": uid},
        {"op": "add", "path": "/status/training", "value": dict(training)},
    ]


def write_training(api: client.ApiClient, namespace: str, name: str, uid: str, training: Mapping[str, object]) -> bool:
    """Write ``training`` into the DIJob ``uid``'s status; False when that DIJob is gone (deleted, or created
    again under its name). A job without a status yet gets one holding ``training`` only
    (:func:`first_status_patch`); another refusal raises ApiException (the caller writes again later)."""
    custom = client.CustomObjectsApi(api)
    try:
        custom.patch_namespaced_custom_object_status(
            GROUP, VERSION, namespace, PLURAL, name, training_patch(uid, training),
            field_manager=FIELD_MANAGER_SERVER, _content_type="application/json-patch+json",
        )  # fmt: skip
    except ApiException as err:
        if err.status == 404:
            return False
        if err.status != 422:
            raise
        try:  # a failed test is a bare 422: read the uid to tell a new object from a missing status
            body = as_dijob(
                cast(dict[str, object], custom.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name))
            )
        except ApiException as again:
            if again.status == 404:
                return False
            raise
        if body["metadata"].get("uid") != uid:
            return False
        if "status" in body:
            raise
        # no status yet (the controller writes it at its first pass): create it, if nothing changed since
        custom.patch_namespaced_custom_object_status(
            GROUP, VERSION, namespace, PLURAL, name, first_status_patch(body, training),
            field_manager=FIELD_MANAGER_SERVER, _content_type="application/json-patch+json",
        )  # fmt: skip
    return True


def first_status_patch(body: DIJobObject, training: Mapping[str, object]) -> list[dict[str, object]]:
    """A status holding only ``training`` for the DIJob ``body`` that has none yet, under its uid and
    resourceVersion (a status another writer created meanwhile refuses it: the next write replaces the field)."""
    meta = body["metadata"]
    return [
        {"op": "test", "path": "/metadata/uid", "value": meta["uid"]},
        {"op": "test", "path": "/metadata/resourceVersion", "value": meta["resourceVersion"]},
        {"op": "add", "path": "/status", "value": {"training": dict(training)}},
    ]
