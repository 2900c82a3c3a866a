"""JSON patch pieces shared by every guarded write (pure): one operation's shape (``PatchOp``), pointer tokens
and the resourceVersion guard."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypedDict, cast

from dihera.shapes.meta import ObjectMeta

__all__ = ["PatchOp", "pointer", "precondition"]


class _PatchOpRequired(TypedDict):
    op: str
    path: str


class PatchOp(_PatchOpRequired, total=False):
    """One JSON patch operation (RFC 6902) as dihera writes it: ``op`` (add, replace, remove, test) at the JSON
    pointer ``path``; ``value`` (not with remove) is passed on to the API server as it is."""

    value: object


def pointer(key: str) -> str:
    """``key`` as one JSON pointer token (RFC 6901): ``diengine/x`` → ``diengine~1x``."""
    return key.replace("~", "~0").replace("/", "~1")


def precondition(obj: Mapping[str, object]) -> PatchOp:
    """A patch operation making the API server refuse the patch (409) if ``obj`` changed since it was read.

    Setting ``metadata.resourceVersion`` in a patch is the API server's optimistic-concurrency check.
    """
    return {
        "op": "replace",
        "path": "/metadata/resourceVersion",
        "value": cast(ObjectMeta, obj["metadata"])["resourceVersion"],
    }
