"""The writes of a pass, done after a pure module decided them: create the job's objects, sync its
replicas (the scaler), write the status (one JSON patch of the fields the controller owns), post the
Events, then what the status records and must follow it.

After the status write, in this order, each decided by a pure module, so a pass that fails in between
does it again next time (the status already records it):

- the scale-down of replicas ``failurePolicy: DropReplica`` dropped (:mod:`~dihera.controller.decide.failures`);
- the pods a scale-down left to the controller (:mod:`dihera.scaling.retired_pods`);
- a held job's Workflow deleted (:mod:`~dihera.controller.decide.hold`: STOP);
- cleanPodPolicy once the job ended (:mod:`~dihera.controller.decide.cleanup`): an ending is recorded before
  anything is stopped, so stopping replicas (which Argo may report as a failed Workflow) can never turn a
  Succeeded job into a Failed one.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from dihera.constants import EVENT_WARNING, TERMINAL_PHASES, EventReason
from dihera.controller.decide.cleanup import plan_cleanup
from dihera.controller.decide.conditions import phase_condition
from dihera.controller.decide.hold import SuspendAction
from dihera.controller.decide.outside import OutsidePlan
from dihera.controller.decide.ownership import Conflict, conflict
from dihera.controller.decide.status import StatusUpdate, status_patch
from dihera.controller.decide.view import JobView
from dihera.controller.metrics import Metrics
from dihera.errors import ScaleError
from dihera.kube.events import EventRecorder
from dihera.kube.jobs import JobStore
from dihera.kube.objects import ObjectStore
from dihera.kube.watch import Store
from dihera.membership import Membership, plan_membership
from dihera.model import DIJob
from dihera.naming import workflow_name
from dihera.objects import labels, metadata
from dihera.render import RenderSettings, render
from dihera.render.objects import membership_configmap, service
from dihera.scaling import ScaleRequest, retired_pods
from dihera.scaling.dag import membership_of_workflow, workflow_generation
from dihera.scaling.executor import ScaleResult
from dihera.shapes.configmap import as_configmap
from dihera.shapes.dijob import DIJobObject, DIJobStatus, as_dijob
from dihera.shapes.pod import Pod
from dihera.shapes.service import as_service
from dihera.shapes.workflow import Workflow

__all__ = ["Applier", "Created", "Scaler", "phase_message"]

#: A claim is created, never read (the controller may only create claims: docs/checkpoints.md): one of that
#: name is the job's, or the one a same-named DIJob kept with reclaimPolicy Retain, and nothing of it is written.
_UNREAD = frozenset({"PersistentVolumeClaim"})


@dataclass(frozen=True)
class Created:
    """What :meth:`Applier.create` made: the job's objects by kind as they are now (only those the DIJob owns),
    its membership, and the objects under its names that it does not own (left untouched; with any, no Workflow
    is created: its replicas would run without their Service or membership)."""

    objects: dict[str, Mapping[str, object]]
    membership: Membership
    conflicts: tuple[Conflict, ...] = ()


def _labelled(found: Mapping[str, object], wanted: Mapping[str, object]) -> bool:
    """Whether an existing object carries the job's labels (what its watch selects it by)."""
    found_labels = labels(found)
    return all(found_labels.get(k) == v for k, v in labels(wanted).items())


def _suspended_in_argo(view: JobView) -> str:
    return (
        f"the Workflow {workflow_name(view.name)} was suspended in Argo (its SUSPEND): the DIJob is suspended "
        "instead (spec.suspend: true: its replicas are stopped, their ranks and FQDNs kept); resume it with "
        f'kubectl patch dijob {view.name} -n {view.namespace} --type merge -p \'{{"spec":{{"suspend":false}}}}\''
    )


log = logging.getLogger("dihera.controller")


class Scaler(Protocol):
    """What the reconciler needs of :class:`dihera.kube.scale_executor.JobScaler`."""

    def scale(self, namespace: str, name: str, request: ScaleRequest, *, update_spec: bool = True) -> ScaleResult: ...


def phase_message(status: DIJobStatus) -> str:
    """The message of the status' True condition (the phase's)."""
    return str(phase_condition(status).get("message") or "")


class Applier:
    """The controller's writes; ``cache``: the watch layer's store, told of each write it must not undo."""

    def __init__(
        self,
        jobs: JobStore,
        objects: ObjectStore,
        events: EventRecorder,
        scaler: Scaler,
        metrics: Metrics,
        render_settings: RenderSettings,
        cache: Store | None = None,
    ) -> None:
        self.jobs, self.objects, self.scaler = jobs, objects, scaler
        self._events, self._metrics, self._render, self._cache = events, metrics, render_settings, cache

    @property
    def render_settings(self) -> RenderSettings:
        return self._render

    # -- before the status write

    def create(self, job: DIJob, previous: Membership | None, extra: Mapping[str, str]) -> Created:
        """Render ``job`` (its replicas as ``previous`` had them) and create what does not exist yet;
        "already exists" reads the object back, so a pass never makes a second Workflow. An object found
        under a job's name that the DIJob does not own is a conflict, left untouched
        (:mod:`~dihera.controller.decide.ownership`); then the Workflow is not created."""
        rendered = render(job, self._render, plan_membership(job, previous))
        created_any = []
        result: dict[str, Mapping[str, object]] = {}
        conflicts: list[Conflict] = []
        for obj in rendered.objects():
            kind = obj["kind"]
            if kind == "Workflow" and conflicts:
                break
            found, created = self.objects.create(obj)
            clash = None if created or kind in _UNREAD else conflict(kind, found, job.name, job.uid)
            if clash is not None:
                log.warning("%s", clash.message, extra=extra)
                conflicts.append(clash)
                continue
            result[kind] = found
            if created:
                created_any.append(f"{kind} {obj['metadata']['name']}")
                self._metrics.wrote("create", kind)
        if created_any:
            log.info("created %s", ", ".join(created_any), extra=extra)
        return Created(result, rendered.membership, tuple(conflicts))

    def sync_replicas(self, view: JobView, why: str, extra: Mapping[str, str]) -> str | None:
        """Bring spec and membership together (a hand edit, or a spec left behind by a commit). None when
        done, else why it was refused (nothing changed). A retryable error (resourceVersion races the
        scaler gave up on) is raised: the queue retries it with backoff; a permanent one is returned."""
        log.info("%s; syncing the running job", why, extra=extra)
        try:
            result = self.scaler.scale(view.namespace, view.name, ScaleRequest.sync(), update_spec=False)
        except ScaleError as err:
            if err.retryable:
                raise
            log.warning("scale refused: %s", err, extra=extra)
            return f"{why}, refused: {err}"
        if result.changed:
            self._metrics.wrote("update", "ConfigMap")
            self._metrics.wrote("patch", "Workflow")
        self._metrics.wrote("delete", "Pod", len(result.deleted_pods))
        return None

    # -- what was done from outside (decide/outside.py)

    def undo_outside(self, view: JobView, plan: OutsidePlan, extra: Mapping[str, str]) -> JobView:
        """Delete a copy of the job's Workflow, suspend the DIJob for an Argo SUSPEND, and create again or put
        back its Service and membership ConfigMap; each with an Event. The view of what is there now."""
        uids = {str(metadata(w)["name"]): metadata(w).get("uid") for w in view.copies}
        for name in plan.copies:
            self._delete_copy(view, name, uids.get(name), extra)
        if plan.suspend and self.jobs.suspend(view.namespace, view.name):
            self._metrics.wrote("patch", "DIJob")
            self._warn(view, EventReason.SUSPENDED_IN_ARGO, _suspended_in_argo(view), extra)
        if plan.service is not None:
            view = self._repair_service(view, plan.service, extra)
        if plan.membership is not None:
            view = self._repair_membership(view, plan.membership, extra)
        return view

    def _warn(self, view: JobView, reason: str, message: str, extra: Mapping[str, str]) -> None:
        log.warning("%s", message, extra=extra)
        self._events.post(view.body, EVENT_WARNING, reason, message)

    def _delete_copy(self, view: JobView, name: str, uid: str | None, extra: Mapping[str, str]) -> None:
        if not self.objects.delete_workflow(view.namespace, name, uid=uid):  # only the copy seen
            return
        self._metrics.wrote("delete", "Workflow")
        message = (
            f"deleted the Workflow {name}, a copy of the job's Workflow {workflow_name(view.name)} (an Argo "
            "RESUBMIT?): it would run every replica a second time under the same hostnames; the DIJob is the "
            "job's source of truth: delete and create the DIJob to run it again"
        )
        self._warn(view, EventReason.WORKFLOW_COPY_DELETED, message, extra)

    def _conflict(self, view: JobView, clash: Conflict, extra: Mapping[str, str]) -> JobView:
        """An object under the job's name that the DIJob does not own: left untouched (the status says so)."""
        log.warning("%s", clash.message, extra=extra)
        view = view.with_conflicts(clash)
        if clash.kind == "Service":
            return dataclasses.replace(view, service=None)
        return dataclasses.replace(view, configmap=None)

    def _repair_service(self, view: JobView, why: str, extra: Mapping[str, str]) -> JobView:
        job = view.job
        assert job is not None
        wanted = service(job)
        name = wanted["metadata"]["name"]
        found: dict[str, Any] | None
        if why == "deleted":
            found, created = self.objects.create(wanted)
            clash = None if created else conflict("Service", found, job.name, job.uid)
            if clash is not None:
                return self._conflict(view, clash, extra)
            if not created and _labelled(found, wanted):
                return dataclasses.replace(view, service=as_service(found))  # the watch cache was behind: it exists
            if not created:  # the job's own, its labels removed (the watch selects by them): put back
                found, why = self._put_service_back(found, wanted), "found without the job's labels"
            else:
                self._metrics.wrote("create", "Service")
        else:
            current = self.objects.get_service(view.namespace, name)
            clash = None if current is None else conflict("Service", current, job.name, job.uid)
            if clash is not None:
                return self._conflict(view, clash, extra)
            found = self._put_service_back(current, wanted) if current else None
        if found is None:
            return view  # gone meanwhile: the next pass creates it
        how = "created again" if why == "deleted" else "put back"
        message = f"the job's headless Service {name} was {why}: {how} (the replicas' FQDNs resolve through it)"
        self._warn(view, EventReason.SERVICE_REPAIRED, message, extra)
        return dataclasses.replace(view, service=as_service(found))

    def _put_service_back(self, current: Mapping[str, Any], wanted: Mapping[str, Any]) -> dict[str, Any] | None:
        """The Service's spec as rendered, and the job's labels, over ``current`` (the job's own)."""
        meta = dict(current["metadata"])
        meta["labels"] = {**(meta.get("labels") or {}), **wanted["metadata"]["labels"]}
        found = self.objects.put_back("Service", current, {"spec": wanted["spec"], "metadata": meta})
        if found is not None:
            self._metrics.wrote("update", "Service")
        return found

    def _repair_membership(self, view: JobView, why: str, extra: Mapping[str, str]) -> JobView:
        assert view.job is not None
        membership = view.membership
        if membership is None:  # deleted, or its membership.json removed or broken: rebuilt from the Workflow
            workflow = self.objects.get_workflow(view.namespace, workflow_name(view.name))
            if workflow is None:
                return view  # the Workflow is gone too: the job fails (WorkflowDeleted)
            recorded = int(view.status.get("membershipGeneration") or 1)
            membership = membership_of_workflow(workflow, max(recorded, workflow_generation(workflow)))
            source = f"the Workflow's {len(membership.replicas)} replicas, generation {membership.generation}"
        else:
            source = "its membership.json"
        job = view.job
        wanted = membership_configmap(job, membership, self._render)
        found: dict[str, Any] | None
        if why == "deleted":
            found, created = self.objects.create(wanted)
            clash = None if created else conflict("ConfigMap", found, job.name, job.uid)
            if clash is not None:
                return self._conflict(view, clash, extra)
            if not created:
                return view  # the watch cache was behind: it exists
            self._metrics.wrote("create", "ConfigMap")
            how = f"created again from {source}"
        else:
            current = self.objects.get_configmap(view.namespace, wanted["metadata"]["name"])
            clash = None if current is None else conflict("ConfigMap", current, job.name, job.uid)
            if clash is not None:
                return self._conflict(view, clash, extra)
            found = self.objects.put_back("ConfigMap", current, {"data": wanted["data"]}) if current else None
            if found is None:
                return view
            self._metrics.wrote("update", "ConfigMap")
            how = f"put back from {source}"
        message = f"the job's membership ConfigMap {wanted['metadata']['name']} was {why}: {how}"
        self._warn(view, EventReason.MEMBERSHIP_REPAIRED, message, extra)
        return dataclasses.replace(view, configmap=as_configmap(found), membership=membership)

    # -- the status write

    def status(self, body: DIJobObject, update: StatusUpdate, extra: Mapping[str, str]) -> DIJobObject:
        """Write the status if it changed, then post its Events; returns the DIJob as written."""
        meta = body["metadata"]
        written: DIJobObject = {**body, "status": update.status.copy()}
        if update.changed:
            written = as_dijob(
                self.jobs.patch_status(meta["namespace"], meta["name"], status_patch(body, update.status))
            )
            self._metrics.wrote("patch", "DIJob/status")
            if self._cache is not None:  # the next pass reads this write, not the version it replaced
                self._cache.replace("DIJob", body, written)
            old_phase = (body.get("status") or {}).get("phase")
            if old_phase != update.phase:
                log.info(
                    "phase %s -> %s: %s", old_phase or "-", update.phase, phase_message(update.status), extra=extra
                )
        if update.restarts_added > 0:
            self._metrics.restarts.inc(update.restarts_added)
        for event in update.events:
            self._events.post(body, event.type, event.reason, event.message)  # counted by the recorder when sent
        return written

    # -- after the status write

    def after_status(
        self,
        view: JobView,
        update: StatusUpdate,
        action: SuspendAction,
        live_pods: Callable[[], Sequence[Pod]] | None,
        extra: Mapping[str, str],
    ) -> None:
        """What the written status records and must follow it, in order (the module docstring)."""
        job, workflow = view.job, view.ours
        if job is None:
            return
        # the scaler just deleted the retired replicas' pods it could (read live): the cache may not show it
        pods = () if view.scaled else view.pods
        self.drop_replicas(job, update.drops, extra)
        if update.phase not in TERMINAL_PHASES and workflow is not None:
            self.delete_retired_pods(job, workflow, pods, extra, live_pods)
        if action is SuspendAction.STOP and workflow is not None:
            self.delete_workflow(job, workflow, extra)
        self.cleanup(job, update.phase, workflow, pods, extra)

    def drop_replicas(self, job: DIJob, names: tuple[str, ...], extra: Mapping[str, str]) -> None:
        """Remove the replicas failurePolicy DropReplica dropped, exactly as a scale-down naming them would.

        A retryable error is raised (the queue retries; the status already records the drop, so the
        next pass drops the same replicas); a permanent one is logged (the next pass decides again).
        """
        if not names:
            return
        try:
            result = self.scaler.scale(job.namespace, job.name, ScaleRequest.remove_named(names))
        except ScaleError as err:
            if err.retryable:
                raise
            log.warning("failurePolicy DropReplica: removing %s refused: %s", ", ".join(names), err, extra=extra)
            return
        if result.changed:
            self._metrics.wrote("update", "ConfigMap")
            self._metrics.wrote("patch", "Workflow")
            self._metrics.wrote("patch", "DIJob")
        self._metrics.wrote("delete", "Pod", len(result.deleted_pods))
        log.info("failurePolicy DropReplica: removed %s from the job", ", ".join(names), extra=extra)

    def delete_retired_pods(
        self,
        job: DIJob,
        workflow: Workflow,
        pods: Sequence[Pod],
        extra: Mapping[str, str],
        live_pods: Callable[[], Sequence[Pod]] | None = None,
    ) -> None:
        """Delete the live pods of retired replicas whose tombstone Argo has finished (the scaler's leftovers).

        A scale-down deletes them itself once Argo acts on its Workflow patch, waiting a bounded time; a pod
        still waiting then (Argo slower still, or a scaler that stopped) is deleted here, when the Workflow's
        watch event shows Argo finished the tombstone. Nothing to do in the steady state. ``pods`` from the
        watch cache may not show the scaler's deletions yet: ``live_pods`` (the API server's list) confirms
        any candidate first, so they are not deleted twice.
        """
        found = retired_pods(job.name, workflow, pods)
        if found.ready and live_pods is not None:
            found = retired_pods(job.name, workflow, live_pods())
        ready = found.ready
        if not ready:
            return
        self.objects.delete_pods(job.namespace, ready, found.uids)
        self._metrics.wrote("delete", "Pod", len(ready))
        log.info("deleted %d pod(s) of retired replicas: %s", len(ready), ", ".join(ready), extra=extra)

    def show_figures(self, workflow: Workflow, annotations: Mapping[str, str], extra: Mapping[str, str]) -> bool:
        """Write the annotations that show the job's RL figures in the Argo UI (:mod:`~dihera.controller.decide.
        figures`), if the Workflow is still the version the decision read; whether it was written."""
        meta = metadata(workflow)
        written = self.objects.annotate_workflow(
            meta["namespace"], meta["name"], annotations, meta.get("resourceVersion", "")
        )
        if written is None:
            log.debug("the Workflow changed before its figures were shown; the next pass shows them", extra=extra)
            return False
        self._metrics.wrote("patch", "Workflow")
        if self._cache is not None:
            self._cache.replace("Workflow", workflow, written)
        return True

    def delete_workflow(self, job: DIJob, workflow: Workflow, extra: Mapping[str, str]) -> None:
        """A held job: delete its Workflow (its pods go with it); the ConfigMap and the Service stay."""
        meta = metadata(workflow)
        if self.objects.delete_workflow(job.namespace, meta["name"], uid=meta.get("uid")):
            self._metrics.wrote("delete", "Workflow")
            log.info("spec.suspend: deleted the Workflow %s; its pods go with it", meta["name"], extra=extra)

    def cleanup(
        self,
        job: DIJob,
        phase: str,
        workflow: Workflow | None,
        pods: Sequence[Pod],
        extra: Mapping[str, str],
    ) -> None:
        """cleanPodPolicy for a finished job's pods still around (idempotent; nothing while it runs): the pods of
        its own Workflow (``pods``), each deleted under its uid."""
        plan = plan_cleanup(job.clean_pod_policy, phase, workflow, pods)
        if plan.empty:
            return
        if plan.shutdown_workflow and workflow is not None:
            stopped = self.objects.shutdown_workflow(job.namespace, metadata(workflow)["name"])
            self._metrics.wrote("patch", "Workflow")
            if self._cache is not None and stopped:  # the next pass does not stop it again
                self._cache.replace("Workflow", workflow, stopped)
        uids = {m["name"]: m["uid"] for p in pods if (m := metadata(p)).get("uid")}
        self.objects.delete_pods(job.namespace, plan.delete_pods, uids)  # concurrently: a big job has thousands
        self._metrics.wrote("delete", "Pod", len(plan.delete_pods))
        log.info(
            "cleanPodPolicy %s: deleted %d pod(s)%s",
            job.clean_pod_policy.value,
            len(plan.delete_pods),
            ", stopped the Workflow" if plan.shutdown_workflow else "",
            extra=extra,
        )

    def delete_job(self, job: DIJob) -> bool:
        """ttlSecondsAfterFinished: delete the DIJob (only this one: its uid) and, in the foreground, what it owns."""
        deleted = self.jobs.delete(job.namespace, job.name, uid=job.uid)
        if deleted:
            self._metrics.wrote("delete", "DIJob")
        return deleted
