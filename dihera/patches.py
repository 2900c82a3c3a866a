"""JSON patch pieces shared by every guarded write (pure): pointer tokens and the resourceVersion guard."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from dihera.shapes.meta import ObjectMeta

__all__ = ["pointer", "precondition"]


def pointer(key: str) -> str:
    """``key`` as one JSON pointer token (RFC 6901): ``diengine/x`` → ``diengine~1x``."""
    return key.replace("~", "~0").replace("/", "~1")


def precondition(obj: Mapping[str, object]) -> dict[str, Any]:
    """A patch operation making the API server refuse the patch (409) if ``obj`` changed since it was read.

    Setting ``metadata.resourceVersion`` in a patch is the API server's optimistic-concurrency check.
    """
    return {
        "op": "replace",
        "path": "/metadata/resourceVersion",
        "value": cast(ObjectMeta, obj["metadata"])["resourceVersion"],
    }
