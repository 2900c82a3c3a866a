"""A ConfigMap as dihera reads it: a job's membership ConfigMap (:mod:`dihera.membership`) is its metadata
(the generation annotation) and its ``data``."""

from __future__ import annotations

from typing import TypedDict

from dihera.shapes.meta import ObjectMeta

__all__ = ["ConfigMap"]


class ConfigMap(TypedDict, total=False):
    metadata: ObjectMeta
    data: dict[str, str]
