"""Whether a hand edit of ``spec.tasks[].replicas`` must be applied to the running job (pure).

The di-server and ``dihera scale`` change a running job through ``JobScaler``: it commits the new
membership to the ConfigMap, patches the Workflow, deletes removed pods and writes the spec last.
A ``kubectl edit`` changes only the spec; the controller then runs the same ``JobScaler`` with
``ScaleRequest.sync()``. Without remembering anything, the controller acts when

- the spec changed since the status was last written (``metadata.generation`` >
  ``status.observedGeneration``): a scaler's commit and Workflow patch do not change the
  generation, so a reconcile between them never undoes a request in flight;
- the live membership (the ConfigMap's, replicas retired in the Workflow left out) differs from the
  spec's counts: the ConfigMap is the truth, not a spec remembered from before;
- the Workflow is converged to the ConfigMap's generation (annotation
  ``diengine/membership-generation``, a fresh Workflow counts as generation 1). Otherwise a scaler
  is between its commit and its Workflow patch: :attr:`EditAction.WAIT` keeps ``observedGeneration``
  where it was, so the next event looks at the edit again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from dihera.controller.replicas import live_replicas
from dihera.membership import Membership
from dihera.model import DIJob
from dihera.scaling import GENERATION_ANNOTATION

__all__ = ["EditAction", "SpecEdit", "converged_generation", "plan_spec_edit", "task_counts"]


class EditAction(StrEnum):
    NONE = "none"  # nothing to apply
    SCALE = "scale"  # call JobScaler.scale(ScaleRequest.sync(), update_spec=False)
    WAIT = "wait"  # a scaler is mid-way: look again on the next event
    REFUSE = "refuse"  # the edit cannot be applied to a running job: say why


@dataclass(frozen=True)
class SpecEdit:
    action: EditAction
    message: str = ""


def task_counts(membership: Membership) -> dict[str, int]:
    """Task → number of replicas in ``membership``."""
    counts: dict[str, int] = {}
    for r in membership.replicas:
        counts[r.task] = counts.get(r.task, 0) + 1
    return counts


def converged_generation(workflow: Mapping[str, Any]) -> int:
    """The membership generation the Workflow's DAG was last converged to (a fresh Workflow: 1)."""
    text = ((workflow.get("metadata") or {}).get("annotations") or {}).get(GENERATION_ANNOTATION)
    try:
        return int(text) if text is not None else 1
    except ValueError:
        return 0


def plan_spec_edit(
    job: DIJob,
    generation: int,
    observed_generation: int | None,
    membership: Membership | None,
    workflow: Mapping[str, Any] | None,
) -> SpecEdit:
    """What to do about the replicas in ``job``'s spec, given the running job's objects."""
    if membership is None or workflow is None or generation <= (observed_generation or 0):
        return SpecEdit(EditAction.NONE)
    live = task_counts(live_replicas(membership, workflow))
    wanted = {t.name: t.replicas for t in job.tasks}
    if set(wanted) != set(live):
        return SpecEdit(
            EditAction.REFUSE,
            f"spec.tasks: the tasks of a running job cannot change (running: {', '.join(live)}; "
            f"spec: {', '.join(wanted)}); only their replicas can",
        )
    if wanted == live:
        return SpecEdit(EditAction.NONE)
    if converged_generation(workflow) < membership.generation:
        return SpecEdit(EditAction.WAIT, f"membership generation {membership.generation} is being applied")
    changes = ", ".join(f"{t} {live[t]} -> {n}" for t, n in wanted.items() if live[t] != n)
    return SpecEdit(EditAction.SCALE, f"spec.tasks[].replicas changed: {changes}")
