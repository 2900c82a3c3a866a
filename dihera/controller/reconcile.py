"""One reconcile of one DIJob: observe → compute (pure) → apply → one status write if it changed → events.

Creation is idempotent: names are deterministic and "already exists" reads the object back, so a
controller restarted at any point never makes a second Workflow. A Workflow that existed
(``status.workflowName`` is set) and is gone makes the job Failed; it is never recreated.
A running job's objects are never rendered again: a hand edit of ``spec.tasks[].replicas``, or a
spec older than the membership (:mod:`dihera.controller.rescale` decides), goes through the same
``JobScaler`` as the di-server.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from dihera.controller.cleanup import plan_cleanup
from dihera.controller.metrics import Metrics
from dihera.controller.rescale import EditAction, plan_spec_edit
from dihera.controller.status import TERMINAL, Observation, StatusUpdate, compute_status
from dihera.errors import InvalidJobError
from dihera.kube.events import EventRecorder
from dihera.kube.jobs import JobStore
from dihera.kube.objects import ObjectStore
from dihera.membership import Membership, plan_membership
from dihera.model import DIJob
from dihera.naming import LABEL_JOB, membership_configmap_name, workflow_name
from dihera.render import RenderSettings, render
from dihera.render.env import MEMBERSHIP_FILE
from dihera.scaling import ScaleError, ScaleRequest, spec_generation
from dihera.validation import load_job

__all__ = ["Reconciler", "Scaler", "utc_now"]

log = logging.getLogger("dihera.controller")


def utc_now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _owned_by(obj: Mapping[str, Any], uid: str | None) -> bool:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    return uid is not None and any(r.get("uid") == uid for r in refs)


def _membership(configmap: Mapping[str, Any] | None) -> Membership | None:
    text = ((configmap or {}).get("data") or {}).get(MEMBERSHIP_FILE)
    return Membership.from_json(text) if text else None


class Scaler(Protocol):
    """What the reconciler needs of :class:`dihera.kube.scaling.JobScaler`."""

    def scale(self, namespace: str, name: str, request: ScaleRequest, *, update_spec: bool = True) -> Any: ...


class Reconciler:
    """Reconciles DIJobs by name; holds no per-job state besides metrics (and the scaler's per-job locks)."""

    def __init__(
        self,
        jobs: JobStore,
        objects: ObjectStore,
        events: EventRecorder,
        render_settings: RenderSettings,
        metrics: Metrics,
        scaler: Scaler,
        clock: Callable[[], str] = utc_now,
    ) -> None:
        self._jobs = jobs
        self._objects = objects
        self._events = events
        self._render = render_settings
        self._metrics = metrics
        self._scaler = scaler
        self._clock = clock

    def reconcile(self, namespace: str, name: str) -> None:
        started = time.perf_counter()
        try:
            self._reconcile(namespace, name)
        except Exception:
            self._metrics.errors.inc()
            raise
        finally:
            self._metrics.reconcile_seconds.observe(time.perf_counter() - started)

    def _reconcile(self, namespace: str, name: str) -> None:
        key = f"{namespace}/{name}"
        extra = {"job": key}
        body = self._jobs.get(namespace, name)
        if body is None or body["metadata"].get("deletionTimestamp"):
            self._metrics.job_phase(key, None)
            return
        old: dict[str, Any] = dict(body.get("status") or {})
        if old.get("phase") in TERMINAL:
            self._metrics.job_phase(key, old["phase"])
            self._cleanup(body, old["phase"], namespace, name, extra)
            return
        job: DIJob | None = None
        invalid: str | None = None
        try:
            job = load_job(body)
        except InvalidJobError as err:
            invalid = "; ".join(str(p) for p in err.problems)

        generation = int(body["metadata"].get("generation") or 0)
        workflow: dict[str, Any] | None = None
        membership: Membership | None = None
        foreign = False
        refused: str | None = None
        if job is not None:
            membership = _membership(self._objects.get_configmap(namespace, membership_configmap_name(name)))
            workflow = self._objects.get_workflow(namespace, workflow_name(name))
            foreign = workflow is not None and not _owned_by(workflow, job.uid)
            if workflow is None and not old.get("workflowName"):
                workflow, membership = self._create(job, membership, extra)
            elif not foreign:
                stamp = spec_generation(body)
                edit = plan_spec_edit(job, stamp, generation, old.get("observedGeneration"), membership, workflow)
                if edit.action in (EditAction.SCALE, EditAction.CATCH_UP):
                    refused = self._scale(namespace, name, edit.message, extra)
                    if refused is None:  # observe what the scaler made
                        cm = self._objects.get_configmap(namespace, membership_configmap_name(name))
                        membership, workflow = (
                            _membership(cm),
                            self._objects.get_workflow(namespace, workflow_name(name)),
                        )
                elif edit.action is EditAction.REFUSE:
                    refused = edit.message
            if membership is None:
                membership = plan_membership(job, None)
        pods: list[dict[str, Any]] = []
        created = workflow is not None and not workflow.get("status")  # made in this pass: the job is Pending
        if workflow is not None and not foreign and not created:
            wf_uid = workflow["metadata"].get("uid")
            pods = [p for p in self._objects.list_pods(namespace, f"{LABEL_JOB}={name}") if _owned_by(p, wf_uid)]
        obs = Observation(
            name=name,
            generation=generation,
            membership=membership,
            backoff_limit=job.backoff_limit if job else 0,
            workflow=workflow,
            pods=pods,
            invalid=invalid,
            foreign_workflow=foreign,
            scale_refused=refused,
        )
        update = compute_status(obs, old, self._clock())
        self._apply(body, update, job, workflow if not foreign else None, pods, extra)

    def _scale(self, namespace: str, name: str, why: str, extra: Mapping[str, str]) -> str | None:
        """Bring spec and membership together (a hand edit, or a spec left behind by a commit).

        None when done, else why it was refused (nothing changed).

        A resourceVersion race the scaler gave up on (``conflict``) is raised: the queue retries it.
        """
        log.info("%s; syncing the running job", why, extra=extra)
        try:
            result = self._scaler.scale(namespace, name, ScaleRequest.sync(), update_spec=False)
        except ScaleError as err:
            if err.reason == "conflict":
                raise
            log.warning("scale refused: %s", err, extra=extra)
            return f"{why}, refused: {err}"
        if result.changed:
            self._metrics.wrote("update", "ConfigMap")
            self._metrics.wrote("patch", "Workflow")
        self._metrics.wrote("delete", "Pod", len(result.deleted_pods))
        return None

    def _create(
        self, job: DIJob, previous: Membership | None, extra: Mapping[str, str]
    ) -> tuple[dict[str, Any], Membership]:
        rendered = render(job, self._render, plan_membership(job, previous))
        created_any = []
        result: dict[str, Any] = {}
        for obj in rendered.objects():
            result, created = self._objects.create(obj)
            if created:
                created_any.append(f"{obj['kind']} {obj['metadata']['name']}")
                self._metrics.wrote("create", obj["kind"])
        if created_any:
            log.info("created %s", ", ".join(created_any), extra=extra)
        return result, rendered.membership

    def _apply(
        self,
        body: Mapping[str, Any],
        update: StatusUpdate,
        job: DIJob | None,
        workflow: Mapping[str, Any] | None,
        pods: list[dict[str, Any]],
        extra: Mapping[str, str],
    ) -> None:
        meta = body["metadata"]
        namespace, name = meta["namespace"], meta["name"]
        phase = update.status["phase"]
        if job is not None:
            self._cleanup_now(job, phase, workflow, pods, extra)
        if update.changed:
            self._jobs.write_status(namespace, name, update.status)
            self._metrics.wrote("patch", "DIJob/status")
            old_phase = (body.get("status") or {}).get("phase")
            if old_phase != phase:
                log.info("phase %s -> %s: %s", old_phase or "-", phase, _message(update.status), extra=extra)
        if update.restarts_added:
            self._metrics.restarts.inc(update.restarts_added)
        self._metrics.job_phase(f"{namespace}/{name}", phase)
        for event in update.events:
            if self._events.post(body, event.type, event.reason, event.message):
                self._metrics.wrote("create", "Event")

    def _cleanup(
        self, body: Mapping[str, Any], phase: str, namespace: str, name: str, extra: Mapping[str, str]
    ) -> None:
        """A finished job: honour cleanPodPolicy for pods that are still around (idempotent)."""
        try:
            job = load_job(body)
        except InvalidJobError:
            return
        workflow = self._objects.get_workflow(namespace, workflow_name(name))
        if workflow is None or not _owned_by(workflow, job.uid):
            return
        wf_uid = workflow["metadata"].get("uid")
        pods = [p for p in self._objects.list_pods(namespace, f"{LABEL_JOB}={name}") if _owned_by(p, wf_uid)]
        self._cleanup_now(job, phase, workflow, pods, extra)

    def _cleanup_now(
        self,
        job: DIJob,
        phase: str,
        workflow: Mapping[str, Any] | None,
        pods: list[dict[str, Any]],
        extra: Mapping[str, str],
    ) -> None:
        plan = plan_cleanup(job.clean_pod_policy, phase, workflow, pods)
        if plan.empty:
            return
        if plan.shutdown_workflow and workflow is not None:
            self._objects.shutdown_workflow(job.namespace, workflow["metadata"]["name"])
            self._metrics.wrote("patch", "Workflow")
        for pod in plan.delete_pods:
            self._objects.delete_pod(job.namespace, pod)
        self._metrics.wrote("delete", "Pod", len(plan.delete_pods))
        log.info(
            "cleanPodPolicy %s: deleted %d pod(s)%s",
            job.clean_pod_policy.value,
            len(plan.delete_pods),
            ", stopped the Workflow" if plan.shutdown_workflow else "",
            extra=extra,
        )


def _message(status: Mapping[str, Any]) -> str:
    for cond in status.get("conditions") or []:
        if cond.get("status") == "True":
            return str(cond.get("message") or "")
    return ""
