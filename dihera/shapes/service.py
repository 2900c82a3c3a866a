"""A job's headless Service as dihera reads it: the spec fields dihera sets (what a repair compares); the
ports are compared whole, so they are opaque here."""

from __future__ import annotations

from typing import TypedDict

from dihera.shapes.meta import ObjectMeta

__all__ = ["Service", "ServiceSpec"]


class ServiceSpec(TypedDict, total=False):
    clusterIP: str
    publishNotReadyAddresses: bool
    selector: dict[str, str]
    ports: list[object]


class Service(TypedDict, total=False):
    metadata: ObjectMeta
    spec: ServiceSpec
