"""What is done to a job's objects from outside dihera, and what it means (pure): the Argo UI's actions on
its Workflow, and its Service or membership ConfigMap deleted or edited by hand or by a tool. The DIJob
is the source of truth (docs/argo-ui.md, "Actions on a DIJob's Workflow"):

- a Workflow labelled with the job and owned by the DIJob that is not its own (Argo's RESUBMIT, which keeps
  the ownerReferences): deleted at once (under its uid), Event
  WorkflowCopyDeleted (the chart's admission policy refuses to create it in the first place);
- the job's Workflow suspended in Argo (SUSPEND): the DIJob is suspended instead (``spec.suspend: true``),
  Event SuspendedInArgo;
- the job's Workflow stopped or terminated (STOP, TERMINATE): the job ends (:func:`workflow_shut_down`),
  Succeeded if its successPolicy is met, else Failed; reason WorkflowStopped or WorkflowTerminated;
- a finished job's Workflow run again (RETRY): refused by the chart's admission policy, else stopped by
  cleanPodPolicy; the Workflow deleted (DELETE): the job fails (WorkflowDeleted);
- the headless Service deleted or its spec edited: created again or put back, Event ServiceRepaired;
- a Service or ConfigMap of the job's name that the DIJob does not own is never written: a conflict
  (:mod:`~dihera.controller.decide.ownership`);
- the membership ConfigMap deleted: created again from the Workflow's replicas and the job's membership
  generation; its node lists edited: put back from its ``membership.json``; Event MembershipRepaired.
"""

from __future__ import annotations

from dataclasses import dataclass

from dihera.constants import EventReason, Phase
from dihera.controller.decide.decision import PhaseDecision
from dihera.controller.decide.hold import HELD_PHASES
from dihera.controller.decide.records import Facts
from dihera.controller.decide.success import success_reached
from dihera.controller.decide.view import JobView
from dihera.membership import Membership
from dihera.model import DIJob
from dihera.naming import workflow_name
from dihera.objects import VersionMemo, metadata
from dihera.render import RenderSettings
from dihera.render.objects import membership_configmap, service
from dihera.shapes.configmap import ConfigMap

__all__ = ["OutsidePlan", "plan_outside", "workflow_shut_down"]

#: Argo's ``spec.shutdown`` values → the phase change's cause.
_SHUTDOWN_CAUSES = {"Stop": EventReason.WORKFLOW_STOPPED, "Terminate": EventReason.WORKFLOW_TERMINATED}


@dataclass(frozen=True)
class OutsidePlan:
    """``copies``: Workflows labelled with the job that are not its own, to delete; ``suspend``: the
    Workflow was suspended in Argo, suspend the DIJob instead; ``service`` / ``membership``: why the
    Service / the membership ConfigMap is written again (None: as it should be)."""

    copies: tuple[str, ...] = ()
    suspend: bool = False
    service: str | None = None
    membership: str | None = None

    @property
    def empty(self) -> bool:
        return not (self.copies or self.suspend or self.service or self.membership)


def plan_outside(view: JobView, settings: RenderSettings) -> OutsidePlan:
    """What to undo or repair of what was done to the job's objects from outside (a valid, started job)."""
    job = view.job
    if job is None or not view.started or view.finished:
        return OutsidePlan()
    ours = view.ours
    return OutsidePlan(
        copies=tuple(sorted(str(metadata(w)["name"]) for w in view.copies)),
        suspend=ours is not None and bool((ours.get("spec") or {}).get("suspend")) and not job.suspend,
        service=_service_repair(view),
        membership=_membership_repair(view, settings),
    )


def _service_repair(view: JobView) -> str | None:
    assert view.job is not None
    if view.conflicting("Service"):
        return None  # another owner's Service holds the name: never written (decide/ownership.py)
    if view.service is None:
        return "deleted"
    wanted = service(view.job)["spec"]
    spec = view.service.get("spec") or {}
    edited = sorted(k for k, v in wanted.items() if spec.get(k) != v)
    return f"edited ({', '.join(f'spec.{k}' for k in edited)})" if edited else None


def _membership_repair(view: JobView, settings: RenderSettings) -> str | None:
    """Why the membership ConfigMap must be written again: gone while the Workflow still runs the job's
    replicas (a held job has none to rebuild it from), or node lists that differ from its membership."""
    if view.conflicting("ConfigMap"):
        return None  # another owner's ConfigMap holds the name: never written (decide/ownership.py)
    if view.configmap is None:
        return "deleted" if view.ours is not None and view.phase not in HELD_PHASES else None
    if view.membership is None:
        return "edited (no readable membership.json)"
    edited = _edited_keys(view.configmap, view.job, view.membership, settings)
    return f"edited ({', '.join(edited)})" if edited else None


def _derived_edits(
    configmap: ConfigMap, job: DIJob, membership: Membership, settings: RenderSettings
) -> tuple[str, ...]:
    """The data keys of the ConfigMap that differ from what its own ``membership.json`` renders."""
    wanted = membership_configmap(job, membership, settings)["data"]
    data = configmap.get("data") or {}
    return tuple(sorted(k for k in wanted.keys() | data.keys() if wanted.get(k) != data.get(k)))


#: Per version of a membership ConfigMap: its edited keys (rendering a 2,000-replica job's node lists
#: every pass would cost more than the pass).
_edited_keys: VersionMemo[tuple[str, ...]] = VersionMemo(_derived_edits, kept=256)


def workflow_shut_down(f: Facts) -> PhaseDecision | None:
    """The phase policy: the job's Workflow was stopped or terminated from outside dihera (Argo's STOP or
    TERMINATE: ``spec.shutdown``): the job ends, Succeeded if its successPolicy is met, else Failed."""
    how = str(((f.view.ours or {}).get("spec") or {}).get("shutdown") or "")
    if how not in _SHUTDOWN_CAUSES:
        return None
    name = f.workflow_name or workflow_name(f.view.name)
    outside = (
        f"the Workflow {name} was told to {how.lower()} from outside dihera "
        f"(spec.shutdown: {how}, e.g. the Argo UI's {how.upper()})"
    )
    why = success_reached(f.success_policy, f.kept)
    if why is not None:
        return PhaseDecision(Phase.SUCCEEDED, f"{why}; {outside}", _SHUTDOWN_CAUSES[how])
    return PhaseDecision(Phase.FAILED, f"{outside}; the job ends with it", _SHUTDOWN_CAUSES[how])
