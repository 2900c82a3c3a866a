"""A ConfigMap as dihera reads it: a job's membership ConfigMap (:mod:`dihera.membership`) is its metadata
(the generation annotation) and its ``data``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypedDict, cast

from dihera.shapes.meta import ObjectMeta

__all__ = ["ConfigMap", "as_configmap"]


class ConfigMap(TypedDict, total=False):
    metadata: ObjectMeta
    data: dict[str, str]


def as_configmap(raw: Mapping[str, object]) -> ConfigMap:
    """A ConfigMap as the API server or the watch cache served it, read through its typed view (the one place a raw
    dict becomes one: a full object holds more than the view declares; the declared keys read the same)."""
    return cast(ConfigMap, raw)
