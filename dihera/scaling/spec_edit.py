"""Whether the DIJob's ``spec.tasks[].replicas`` and its running membership must be brought together (pure).

The di-server and ``dihera scale`` change a running job through ``JobScaler``: it commits the new
membership to the ConfigMap (generation + 1), patches the Workflow, deletes removed pods and last
writes the spec's counts together with the stamp ``diengine/membership-generation = g`` on the
DIJob (g: the membership those counts were read from). A ``kubectl edit`` changes only the spec and
leaves the stamp alone. With ``m`` the ConfigMap's generation and ``s`` the stamp (none: 1):

- ``s < m``: a membership was committed after the spec was last written: the spec is older than
  the membership (a scaler is still on its way to the spec, was overtaken by a newer one, or
  crashed) and must never be applied. :attr:`EditAction.CATCH_UP`: the spec follows the membership
  (``JobScaler`` converges the Workflow and writes counts and stamp from the latest membership; the
  same writes the scaler itself would make, so racing it is harmless);
- ``s >= m`` and the live membership (the ConfigMap's, replicas retired in the Workflow left out)
  differs from the spec's counts: the spec was edited after the last commit: a hand edit,
  :attr:`EditAction.SCALE`: the membership follows the spec, then the stamp is set to the generation
  committed for it;
- otherwise they agree: :attr:`EditAction.NONE`.

Both actions are the one call ``JobScaler.scale(ns, name, ScaleRequest.sync(), update_spec=False)``,
which decides again on the reads it commits with. ``metadata.generation > status.observedGeneration``
only keeps an edit that was refused (or a task list that cannot change) from being retried and
reported on every event; it plays no part in telling a hand edit from a scaler's write.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from dihera.membership import Membership
from dihera.model import DIJob
from dihera.scaling.dag import live_replicas

__all__ = ["EditAction", "SpecEdit", "plan_spec_edit"]


class EditAction(StrEnum):
    NONE = "none"  # spec and membership agree
    SCALE = "scale"  # a hand edit: JobScaler.scale(ScaleRequest.sync(), update_spec=False) applies it
    CATCH_UP = "catch-up"  # the spec is older than the membership: the same call rewrites the spec
    REFUSE = "refuse"  # the edit cannot be applied to a running job: say why


@dataclass(frozen=True)
class SpecEdit:
    action: EditAction
    message: str = ""


def plan_spec_edit(
    job: DIJob,
    stamp: int,
    generation: int,
    observed_generation: int | None,
    membership: Membership | None,
    workflow: Mapping[str, object] | None,
) -> SpecEdit:
    """What to do about the replicas in ``job``'s spec, given the running job's objects.

    ``stamp``: the DIJob's ``diengine/membership-generation`` (:func:`dihera.scaling.spec_patch.spec_generation`).
    """
    if membership is None or workflow is None:
        return SpecEdit(EditAction.NONE)
    unseen = generation > (observed_generation or 0)
    live = live_replicas(membership, workflow).task_counts()
    wanted = {t.name: t.replicas for t in job.tasks}
    if set(wanted) != set(live):
        if not unseen:
            return SpecEdit(EditAction.NONE)
        return SpecEdit(
            EditAction.REFUSE,
            f"spec.tasks: the tasks of a running job cannot change (running: {', '.join(live)}; "
            f"spec: {', '.join(wanted)}); only their replicas can",
        )
    if stamp < membership.generation:
        return SpecEdit(
            EditAction.CATCH_UP,
            f"membership generation {membership.generation} is newer than the spec (written at {stamp})",
        )
    if wanted == live or not unseen:
        return SpecEdit(EditAction.NONE)
    changes = ", ".join(f"{t} {live[t]} -> {n}" for t, n in wanted.items() if live[t] != n)
    return SpecEdit(EditAction.SCALE, f"spec.tasks[].replicas changed: {changes}")
