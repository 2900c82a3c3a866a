"""The Kueue Workload of a DIJob, and what Kueue's answer in its status means (pure).

One Workload per job (``dijob-<job>``): one podSet per task (name = the task's name, count = its
replicas, template = the task's pod template, whose requests Kueue counts), the queue from the job's
label ``kueue.x-k8s.io/queue-name``, the priority class from ``spec.priority`` and ``spec.preemptible``
(:class:`dihera.queueing.settings.KueueSettings`). The DIJob is its controller owner, as Kueue expects of
an external framework, so deleting the job deletes it. A scale-up asks Kueue for the added replicas
with a *slice* Workload of the same shape (``dijob-<job>-g<generation>``; docs/queueing.md).

The status writes the job side owes Kueue are JSON patches built here: releasing the quota of an
evicted Workload once its replicas are stopped (what Kueue's own job reconciler does: QuotaReserved
False, admission removed, Requeued True after a preemption) and ``Finished`` when the job ended.

What the answer means for the job is read here too (:func:`queue_state`): admitted, or held and why (waiting,
or evicted: the job's Workload or one of its slices), as a :class:`QueueState` the controller's view carries
and :mod:`dihera.controller.decide.hold` decides from.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dihera.constants import KUEUE_API_VERSION, KUEUE_GROUP, LABEL_JOB, LABEL_QUEUE_NAME, MANAGED_BY, EventReason
from dihera.model import DIJob
from dihera.objects import owner_reference
from dihera.patches import PatchOp, precondition
from dihera.schema import API_VERSION, KIND
from dihera.shapes.meta import ObjectMeta
from dihera.shapes.workload import PodSet, PodSetTemplate, WorkloadCondition, WorkloadObject, as_workload

__all__ = [
    "Placement",
    "QueueState",
    "WorkloadView",
    "build_workload",
    "finish_patch",
    "placements",
    "queue_name",
    "queue_state",
    "requeue_patch",
    "slice_name",
    "unqueueable",
    "view_workload",
    "with_placements",
    "workload_name",
]

QUOTA_RESERVED = "QuotaReserved"
ADMITTED = "Admitted"
EVICTED = "Evicted"
FINISHED = "Finished"
REQUEUED = "Requeued"
#: Eviction reasons after which Kueue's own job reconciler sets Requeued True.
_REQUEUED_AFTER = frozenset({"Preempted", "NodeFailures"})


def workload_name(job: str) -> str:
    """The Workload of a job: ``dijob-<job>``."""
    return f"dijob-{job}"


def slice_name(job: str, generation: int) -> str:
    """The Workload asking quota for the replicas a scale-up to membership ``generation`` adds."""
    return f"dijob-{job}-g{generation}"


def queue_name(labels: Mapping[str, str] | None) -> str | None:
    """The LocalQueue a DIJob's labels name (None: Kueue is not involved)."""
    value = (labels or {}).get(LABEL_QUEUE_NAME)
    return value or None


def _pod_template(template: Mapping[str, Any]) -> PodSetTemplate:
    """A task's pod template as a podSet holds it (Kueue allows only labels and annotations in its metadata)."""
    meta = template.get("metadata") or {}
    out: PodSetTemplate = {"spec": copy.deepcopy(dict(template.get("spec") or {}))}
    kept: ObjectMeta = {}
    if meta.get("labels"):
        kept["labels"] = dict(meta["labels"])
    if meta.get("annotations"):
        kept["annotations"] = dict(meta["annotations"])
    if kept:
        out["metadata"] = kept
    return out


def build_workload(
    job: DIJob,
    queue: str,
    priority_class: str,
    priority: int,
    counts: Mapping[str, int] | None = None,
    name: str | None = None,
    annotations: Mapping[str, str] | None = None,
) -> WorkloadObject:
    """The Workload asking ``queue`` for ``job``'s replicas (``counts``: task → replicas; default the
    spec's; a task with 0 is left out). ``priority`` is the value of the WorkloadPriorityClass
    ``priority_class`` (Kueue orders and preempts by it). ``name``: default :func:`workload_name`."""
    wanted = counts if counts is not None else {t.name: t.replicas for t in job.tasks}
    pod_sets: list[PodSet] = [
        {"name": t.name, "count": int(wanted[t.name]), "template": _pod_template(t.template)}
        for t in job.tasks
        if wanted.get(t.name, 0) > 0
    ]
    owner = owner_reference(API_VERSION, KIND, job.name, str(job.uid))
    metadata: ObjectMeta = {
        "name": name or workload_name(job.name),
        "namespace": job.namespace,
        "labels": {**MANAGED_BY, LABEL_JOB: job.name},
        "ownerReferences": [owner],
    }
    if annotations:
        metadata["annotations"] = dict(annotations)
    return {
        "apiVersion": KUEUE_API_VERSION,
        "kind": "Workload",
        "metadata": metadata,
        "spec": {
            "queueName": queue,
            "priorityClassRef": {"group": KUEUE_GROUP, "kind": "WorkloadPriorityClass", "name": priority_class},
            "priority": priority,
            "podSets": pod_sets,
        },
    }


def _condition(workload: Mapping[str, object], kind: str) -> WorkloadCondition | None:
    for cond in (as_workload(workload).get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            return WorkloadCondition(**cond)
    return None


def _true(cond: WorkloadCondition | None) -> bool:
    return cond is not None and cond.get("status") == "True"


@dataclass(frozen=True)
class WorkloadView:
    """What a Workload's status says, as the job side reads it.

    ``admitted``: Admitted True, not evicted and not finished: the replicas may run. ``evicted``:
    ``(reason, message)`` of an Evicted True condition. ``reserved``: QuotaReserved True (an evicted
    Workload keeps it until the job side releases it, once its replicas are stopped). ``waiting``:
    Kueue's word on why it is not admitted (``reason: message``), or None.
    """

    name: str
    admitted: bool
    reserved: bool
    finished: bool
    evicted: tuple[str, str] | None
    waiting: str | None
    #: podSet name → {resource → flavor} of the admission (empty when not admitted)
    flavors: Mapping[str, Mapping[str, str]]

    @property
    def requeue_due(self) -> bool:
        """Evicted and still holding its quota: the job side must release it once nothing runs."""
        return self.evicted is not None and self.reserved and not self.finished


def _waiting(reserved: WorkloadCondition | None, admitted: WorkloadCondition | None) -> str | None:
    """Kueue's word on why a Workload is not admitted (``reason: message``): its QuotaReserved condition
    when that is not True, else its Admitted condition; None when admitted or when Kueue said nothing."""
    if _true(admitted):
        return None
    why = reserved if reserved is not None and not _true(reserved) else admitted
    if why is None or not why.get("message"):
        return None
    return f"{why.get('reason') or 'Pending'}: {why['message']}"


def _eviction(evicted: WorkloadCondition | None) -> tuple[str, str] | None:
    """``(reason, message)`` of an Evicted condition that is True, else None."""
    if evicted is None or not _true(evicted):
        return None
    return (str(evicted.get("reason") or ""), str(evicted.get("message") or ""))


def _admission_flavors(workload: Mapping[str, object]) -> dict[str, dict[str, str]]:
    """podSet name → {resource → flavor} of the Workload's admission (empty when not admitted)."""
    admission = (as_workload(workload).get("status") or {}).get("admission") or {}
    assignments = admission.get("podSetAssignments") or []
    return {str(a.get("name")): dict(a.get("flavors") or {}) for a in assignments}


def view_workload(workload: Mapping[str, object]) -> WorkloadView:
    """Read a Workload's conditions and admission."""
    reserved = _condition(workload, QUOTA_RESERVED)
    admitted = _condition(workload, ADMITTED)
    evicted = _eviction(_condition(workload, EVICTED))
    finished = _true(_condition(workload, FINISHED))
    waiting = _waiting(reserved, admitted)
    flavors = _admission_flavors(workload)
    return WorkloadView(
        name=str((as_workload(workload).get("metadata") or {}).get("name") or ""),
        admitted=_true(admitted) and evicted is None and not finished,
        reserved=_true(reserved),
        finished=finished,
        evicted=evicted,
        waiting=waiting,
        flavors=flavors,
    )


@dataclass(frozen=True)
class Placement:
    """Where a task's pods must go: the assigned ResourceFlavors' node labels and tolerations."""

    node_selector: Mapping[str, str] = dataclasses.field(default_factory=dict)
    tolerations: tuple[Mapping[str, Any], ...] = ()


def placements(view: WorkloadView, flavors: Mapping[str, Mapping[str, Any]]) -> dict[str, Placement]:
    """Task → :class:`Placement` from the admission's flavors (``flavors``: ResourceFlavor name → object).

    A flavor not given (deleted meanwhile) adds nothing; a task whose flavors add nothing is left out.
    """
    out: dict[str, Placement] = {}
    for task, assigned in view.flavors.items():
        selector: dict[str, str] = {}
        tolerations: list[Mapping[str, Any]] = []
        for flavor_name in sorted(set(assigned.values())):
            spec = (flavors.get(flavor_name) or {}).get("spec") or {}
            selector.update(spec.get("nodeLabels") or {})
            tolerations.extend(t for t in spec.get("tolerations") or [] if t not in tolerations)
        if selector or tolerations:
            out[task] = Placement(selector, tuple(tolerations))
    return out


def _placed(template: Mapping[str, Any], placement: Placement) -> dict[str, Any]:
    out = copy.deepcopy(dict(template))
    spec = out.setdefault("spec", {})
    if placement.node_selector:
        spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), **placement.node_selector}
    if placement.tolerations:
        have = list(spec.get("tolerations") or [])
        spec["tolerations"] = have + [dict(t) for t in placement.tolerations if t not in have]
    return out


def with_placements(job: DIJob, where: Mapping[str, Placement]) -> DIJob:
    """``job`` as its Workflow is rendered once admitted: each task's pod template with its flavors' node
    labels (merged into ``nodeSelector``) and tolerations (appended), and without the queue label (the
    Workflow and pods are not Kueue's to manage: the DIJob's Workload holds their quota)."""
    tasks = tuple(
        dataclasses.replace(t, template=_placed(t.template, where[t.name])) if t.name in where else t for t in job.tasks
    )
    labels = {k: v for k, v in job.labels.items() if k != LABEL_QUEUE_NAME}
    return dataclasses.replace(job, tasks=tasks, labels=labels)


def _set_conditions(
    conditions: Sequence[WorkloadCondition], new: Sequence[WorkloadCondition], now: str, generation: int
) -> list[WorkloadCondition]:
    """``conditions`` with each of ``new`` set (``lastTransitionTime`` kept unless its status flips)."""
    out = [WorkloadCondition(**c) for c in conditions]
    for cond in new:
        full: WorkloadCondition = {**cond, "observedGeneration": generation, "lastTransitionTime": now}
        for i, old in enumerate(out):
            if old.get("type") == cond["type"]:
                if old.get("status") == cond["status"]:
                    full["lastTransitionTime"] = old.get("lastTransitionTime") or now
                out[i] = full
                break
        else:
            out.append(full)
    return out


def requeue_patch(workload: Mapping[str, object], now: str, evicted: tuple[str, str] | None = None) -> list[PatchOp]:
    """JSON patch of ``workloads/status`` releasing an evicted Workload's quota once its replicas are
    stopped, as Kueue's job reconciler does for its own integrations: QuotaReserved False (reason
    Pending, the eviction's message), Admitted False, ``admission`` and ``reclaimablePods`` removed, and
    Requeued True after a preemption (False otherwise). ``evicted``: ``(reason, message)`` when another
    of the job's Workloads (a scale-up's slice) was evicted, not this one. [] when nothing is to release."""
    view = view_workload(workload)
    eviction = view.evicted or evicted
    if eviction is None or not view.reserved or view.finished:
        return []
    reason, message = eviction
    typed = as_workload(workload)
    status = typed.get("status") or {}
    generation = int((typed.get("metadata") or {}).get("generation") or 0)
    conditions = _set_conditions(
        status.get("conditions") or [],
        [
            {
                "type": REQUEUED,
                "status": "True" if reason in _REQUEUED_AFTER else "False",
                "reason": reason,
                "message": message,
            },
            {"type": QUOTA_RESERVED, "status": "False", "reason": "Pending", "message": message},
            {
                "type": ADMITTED,
                "status": "False",
                "reason": "NoReservation",
                "message": "The workload has no reservation",
            },
        ],
        now,
        generation,
    )
    ops: list[PatchOp] = [
        precondition(workload),
        {"op": "add", "path": "/status/conditions", "value": conditions},
    ]
    ops += [{"op": "remove", "path": f"/status/{key}"} for key in ("admission", "reclaimablePods") if key in status]
    return ops


def finish_patch(workload: Mapping[str, object], succeeded: bool, message: str, now: str) -> list[PatchOp]:
    """JSON patch of ``workloads/status`` marking the Workload ``Finished`` (reason Succeeded or Failed), so
    Kueue releases its quota. [] when it is already finished."""
    if view_workload(workload).finished:
        return []
    typed = as_workload(workload)
    status = typed.get("status") or {}
    generation = int((typed.get("metadata") or {}).get("generation") or 0)
    finished: WorkloadCondition = {
        "type": FINISHED,
        "status": "True",
        "reason": "Succeeded" if succeeded else "Failed",
        "message": message or ("the DIJob succeeded" if succeeded else "the DIJob failed"),
    }
    conditions = _set_conditions(status.get("conditions") or [], [finished], now, generation)
    if "status" not in workload:
        return [precondition(workload), {"op": "add", "path": "/status", "value": {"conditions": conditions}}]
    return [precondition(workload), {"op": "add", "path": "/status/conditions", "value": conditions}]


@dataclass(frozen=True)
class QueueState:
    """A queued job's Workload as one pass saw it. ``hold``: why the job may not run (None: admitted);
    ``cause``: the Event reason of that (Evicted); ``retry``: seconds before the pass must run again."""

    workload: Mapping[str, Any] | None
    view: WorkloadView | None
    hold: str | None
    cause: str | None = None
    retry: float | None = None
    #: The job's scale-up slices (docs/queueing.md, "Scaling under quota"), oldest first.
    slices: tuple[Mapping[str, Any], ...] = ()
    #: ``(reason, message)`` of a slice Kueue evicted (the whole job is stopped and requeued then).
    slice_evicted: tuple[str, str] | None = None

    @property
    def requeue_due(self) -> bool:
        """Evicted (the job's Workload or a slice) and still holding quota: release it once nothing runs."""
        if self.view is None:
            return False
        return self.view.requeue_due or (self.slice_evicted is not None and self.view.reserved)


# -- what Kueue's answer means for the job: admitted, or held and why


def _hold_message(queue: str, view: WorkloadView, slice_evicted: tuple[str, str] | None) -> tuple[str, str | None]:
    evicted = view.evicted or slice_evicted
    if evicted is not None:
        reason, message = evicted
        return f"evicted by Kueue ({reason}: {message}); queued again in LocalQueue {queue}", EventReason.EVICTED
    why = f": {view.waiting}" if view.waiting else ""
    return f"waiting for Kueue to admit Workload {view.name} in LocalQueue {queue}{why}", None


def queue_state(queue: str, workload: Mapping[str, Any], slices: Sequence[Mapping[str, Any]]) -> QueueState:
    """The state of a job queued in LocalQueue ``queue``: its Workload and its slices (oldest first)."""
    view = view_workload(workload)
    slice_evicted = next((v.evicted for v in map(view_workload, slices) if v.evicted is not None), None)
    if view.admitted and slice_evicted is None:
        return QueueState(workload, view, None, slices=tuple(slices))
    hold, cause = _hold_message(queue, view, slice_evicted)
    return QueueState(workload, view, hold, cause, slices=tuple(slices), slice_evicted=slice_evicted)


def unqueueable(queue: str, why: str, retry: float) -> QueueState:
    """A job whose Workload cannot be created (a missing priority class): held, tried again in ``retry`` s."""
    return QueueState(None, None, f"cannot queue the job in LocalQueue {queue}: {why}", retry=retry)
