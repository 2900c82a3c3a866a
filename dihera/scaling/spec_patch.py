"""The DIJob side of scaling (pure): its stamp and the JSON patches writing counts and stamp.

The stamp ``diengine/membership-generation`` is the membership generation the spec's
``spec.tasks[].replicas`` were last written or synced at; it never decreases (docs/scaling.md).
"""

from __future__ import annotations

from collections.abc import Mapping

from dihera.constants import ANNOTATION_GENERATION
from dihera.membership import Membership
from dihera.patches import PatchOp, pointer
from dihera.shapes.dijob import as_dijob

__all__ = ["GENERATION_ANNOTATION", "job_spec_patch", "spec_generation", "spec_is_current", "stamp_patch"]

GENERATION_ANNOTATION = ANNOTATION_GENERATION


def spec_generation(manifest: Mapping[str, object]) -> int:
    """The DIJob's stamp: the membership generation its spec's replicas were written or synced at.

    No stamp: 1 (a job's first membership is rendered from its spec); an unreadable one: 0 (older
    than any membership, so the spec follows the membership).
    """
    text = ((as_dijob(manifest).get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_GENERATION)
    try:
        return int(text) if text is not None else 1
    except ValueError:
        return 0


def spec_is_current(manifest: Mapping[str, object], membership: Membership) -> bool:
    """Whether the DIJob's spec is at least as new as ``membership`` (its stamp ≥ the generation).

    A current spec whose counts differ from the membership is a hand edit: the membership follows it.
    An older one was written before ``membership`` was committed (by a scaler since overtaken, or by
    hand while a request was in flight): it is never applied; the spec follows the membership.
    """
    return spec_generation(manifest) >= membership.generation


def _stamp_ops(manifest: Mapping[str, object], generation: int) -> list[PatchOp]:
    if spec_generation(manifest) >= generation:
        return []  # the stamp never goes back
    ops: list[PatchOp] = []
    if (as_dijob(manifest).get("metadata") or {}).get("annotations") is None:
        ops.append({"op": "add", "path": "/metadata/annotations", "value": {}})
    key = f"/metadata/annotations/{pointer(ANNOTATION_GENERATION)}"
    ops.append({"op": "add", "path": key, "value": str(generation)})
    return ops


def job_spec_patch(
    manifest: Mapping[str, object], counts: Mapping[str, int], generation: int | None = None
) -> list[PatchOp]:
    """JSON patch setting ``spec.tasks[i].replicas`` of a DIJob manifest to ``counts`` ([] if equal).

    With ``generation`` (the membership ``counts`` were read from) it also stamps the DIJob with it,
    in the same patch; a stamp is never lowered, and a ``generation`` no newer than the stamp writes
    nothing at all: the spec was already written for it (or a newer one), and counts that differ now are
    a hand edit made since, for the controller to apply, never to undo. (A writer that decided to catch
    the spec up on an older read must not overwrite such an edit on this one.)
    """
    if generation is not None and spec_generation(manifest) >= generation:
        return []  # written for this membership or a newer one: what differs is a later hand edit
    ops: list[PatchOp] = []
    for i, t in enumerate(as_dijob(manifest)["spec"]["tasks"]):
        name = t.get("name") or t.get("type")
        if name is not None and name in counts and t.get("replicas", 1) != counts[name]:
            if "name" in t:
                ops.append({"op": "test", "path": f"/spec/tasks/{i}/name", "value": t["name"]})
            ops.append({"op": "replace", "path": f"/spec/tasks/{i}/replicas", "value": counts[name]})
    if generation is not None:
        ops += _stamp_ops(manifest, generation)
    return ops


def stamp_patch(manifest: Mapping[str, object], generation: int) -> list[PatchOp]:
    """JSON patch stamping a DIJob (metadata only) with ``generation`` ([] if its stamp is as new)."""
    return _stamp_ops(manifest, generation)
