"""The metadata every builder shares: name, namespace, uid, version, labels, annotations, owners, timestamps."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Self

from dihera.constants import ANNOTATION_GENERATION, LABEL_JOB

__all__ = ["ObjectBuilder"]

#: the deletionTimestamp :meth:`ObjectBuilder.deleting` writes unless told another
DELETING_SINCE = "2026-01-01T00:00:00Z"


class ObjectBuilder:
    """``metadata`` of a Kubernetes object, one call per field; subclasses add their kind's spec and status.

    Every field is absent until a call sets it, so an object holds only what the test asked for.
    """

    def __init__(self, name: str) -> None:
        self._meta: dict[str, Any] = {"name": name}

    def namespace(self, namespace: str) -> Self:
        self._meta["namespace"] = namespace
        return self

    def uid(self, uid: str) -> Self:
        self._meta["uid"] = uid
        return self

    def version(self, resource_version: str) -> Self:
        """``metadata.resourceVersion``."""
        self._meta["resourceVersion"] = resource_version
        return self

    def generation(self, generation: int) -> Self:
        self._meta["generation"] = generation
        return self

    def labels(self, labels: Mapping[str, str]) -> Self:
        """Add ``labels`` (``metadata.labels`` exists afterwards, even when ``labels`` is empty)."""
        self._meta.setdefault("labels", {}).update(labels)
        return self

    def label(self, key: str, value: str) -> Self:
        return self.labels({key: value})

    def job(self, name: str) -> Self:
        """The ``diengine/job`` label: the object belongs to the DIJob ``name``."""
        return self.label(LABEL_JOB, name)

    def annotations(self, annotations: Mapping[str, str]) -> Self:
        """Add ``annotations`` (``metadata.annotations`` exists afterwards, even when ``annotations`` is empty)."""
        self._meta.setdefault("annotations", {}).update(annotations)
        return self

    def annotation(self, key: str, value: str) -> Self:
        return self.annotations({key: value})

    def membership_generation(self, generation: int | str) -> Self:
        """The ``diengine/membership-generation`` annotation: on a DIJob, the membership its spec was written
        with; on a Workflow, the membership it was converged to."""
        return self.annotation(ANNOTATION_GENERATION, str(generation))

    def created(self, timestamp: str) -> Self:
        """``metadata.creationTimestamp``."""
        self._meta["creationTimestamp"] = timestamp
        return self

    def deleting(self, since: str = DELETING_SINCE) -> Self:
        """``metadata.deletionTimestamp``: the object is being deleted."""
        self._meta["deletionTimestamp"] = since
        return self

    def owner(self, uid: str, **fields: Any) -> Self:
        """One more ``metadata.ownerReferences`` entry: ``{"uid": uid, **fields}``."""
        self._meta.setdefault("ownerReferences", []).append({"uid": uid, **fields})
        return self

    def metadata(self) -> dict[str, Any]:
        """A copy of the metadata built so far."""
        return copy.deepcopy(self._meta)
