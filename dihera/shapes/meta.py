"""The metadata every object shares (``metav1.ObjectMeta``, ``OwnerReference``) as dihera reads it."""

from __future__ import annotations

from typing import TypedDict

__all__ = ["ObjectMeta", "OwnerReference"]


class OwnerReference(TypedDict, total=False):
    apiVersion: str
    kind: str
    name: str
    uid: str
    controller: bool
    blockOwnerDeletion: bool


class ObjectMeta(TypedDict, total=False):
    name: str
    generateName: str
    namespace: str
    uid: str
    resourceVersion: str
    generation: int
    creationTimestamp: str
    deletionTimestamp: str
    labels: dict[str, str]
    annotations: dict[str, str]
    ownerReferences: list[OwnerReference]
    finalizers: list[str]
