"""A job's headless Service as dihera reads it: the spec fields dihera sets (what a repair compares); the
ports are compared whole, so they are opaque here."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypedDict, cast

from dihera.shapes.meta import ObjectMeta

__all__ = ["Service", "ServiceSpec", "as_service"]


class ServiceSpec(TypedDict, total=False):
    clusterIP: str
    publishNotReadyAddresses: bool
    selector: dict[str, str]
    ports: list[object]


class Service(TypedDict, total=False):
    metadata: ObjectMeta
    spec: ServiceSpec


def as_service(raw: Mapping[str, object]) -> Service:
    """A Service as the API server or the watch cache served it, read through its typed view (the one place a raw
    dict becomes one: a full object holds more than the view declares; the declared keys read the same)."""
    return cast(Service, raw)
