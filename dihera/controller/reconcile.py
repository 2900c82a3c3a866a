"""One reconcile of one DIJob: observe → compute (pure) → apply → one status write if it changed → events.

Creation is idempotent: names are deterministic and "already exists" reads the object back, so a
controller restarted at any point never makes a second Workflow. A Workflow that existed
(``status.workflowName`` is set) and is gone makes the job Failed; it is never recreated.
A running job's objects are never rendered again: a hand edit of ``spec.tasks[].replicas``, or a
spec older than the membership (:mod:`dihera.scaling.spec_edit` decides), goes through the same
``JobScaler`` as the di-server.

``spec.suspend`` deletes a running job's Workflow after the Suspended status is written and creates it
again from the membership on resume (:mod:`dihera.controller.suspend` decides); a replica that
``failurePolicy: DropReplica`` dropped is removed through the same ``JobScaler`` as a scale-down, after
the status recording the drop is written (:mod:`dihera.controller.failure_policy` decides).

A pass returns the seconds until a time-based decision is due (``activeDeadlineSeconds`` of a running
job, ``ttlSecondsAfterFinished`` of a finished one), or None; the queue reconciles the job again then.

Reads come from the watch cache (:mod:`dihera.controller.reads`): a steady-state pass sends no GET or
LIST. The API server is asked only when the cache may be behind what a decision needs (a Workflow or
ConfigMap the status already records but the cache has not delivered yet, a phase that ends the job,
a status write refused by its resourceVersion precondition); docs/controller.md, "Reading from watches".
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from dihera.constants import EventReason
from dihera.controller.cleanup import plan_cleanup
from dihera.controller.deadlines import seconds_left
from dihera.controller.effects import Scaler, delete_retired_pods, delete_workflow, drop_replicas
from dihera.controller.metrics import Metrics
from dihera.controller.queueing import Queueing, QueueState
from dihera.controller.reads import CachedReads, LiveReads, Reads
from dihera.controller.status import (
    TERMINAL,
    Observation,
    StatusUpdate,
    compute_status,
    progress_only,
    status_patch,
)
from dihera.controller.suspend import HELD_PHASES, SuspendAction, SuspendPlan, plan_suspend, resumed_job
from dihera.controller.validated import ValidatedJobs
from dihera.errors import InvalidJobError, ScaleError
from dihera.kube.events import EventRecorder
from dihera.kube.jobs import JobStore, StatusConflict
from dihera.kube.objects import ObjectStore
from dihera.kube.watch import Store
from dihera.membership import Membership, plan_membership
from dihera.model import DIJob
from dihera.naming import membership_configmap_name, workflow_name
from dihera.queueing import with_placements
from dihera.render import RenderSettings, render
from dihera.render.env import MEMBERSHIP_FILE
from dihera.scaling import EditAction, ScaleRequest, plan_spec_edit, spec_generation

__all__ = ["CacheBehind", "ConfirmLive", "Reconciler", "Scaler", "utc_now"]

log = logging.getLogger("dihera.controller")
#: Reads-and-recomputes of one reconcile whose status write met another writer, before the queue retries.
STATUS_ATTEMPTS = 5
#: Seconds until a pass that found its namespace's job objects still being listed runs again, at the
#: latest: the end of the listing queues it at once (:meth:`dihera.kube.watch.Watches.ready`).
LISTING_WAIT = 1.0


class CacheBehind(Exception):
    """The watch cache has not delivered an object the job's status already records: the pass writes
    nothing; that object's watch event queues the job again."""


class ConfirmLive(Exception):
    """A decision from the watch cache that cannot be undone (a terminal phase): read from the API and decide again."""


def utc_now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _owned_by(obj: Mapping[str, Any], uid: str | None) -> bool:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    return uid is not None and any(r.get("uid") == uid for r in refs)


def _membership(configmap: Mapping[str, Any] | None) -> Membership | None:
    text = ((configmap or {}).get("data") or {}).get(MEMBERSHIP_FILE)
    return _parse_membership(text) if text else None


@functools.lru_cache(maxsize=64)
def _parse_membership(text: str) -> Membership:
    """A membership is parsed once per ConfigMap version (a 2,000-replica one is 90 KB of JSON), not per pass."""
    return Membership.from_json(text)


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
        cache: Store | None = None,
        queueing: Queueing | None = None,
        job_objects_ready: Callable[[str, str], bool] | None = None,
        progress_batch: float = 0.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        """``cache``: read from the watches (None: every read goes to the API server); ``queueing``:
        Kueue's side of jobs labelled ``kueue.x-k8s.io/queue-name`` (None: the label is ignored);
        ``job_objects_ready(namespace, job)``: whether the cache holds the namespace's pods, Workflows
        and ConfigMaps (starting their watches, :meth:`dihera.kube.watch.Watches.ready`, which queues the job again when
        they are in); a pass from the cache waits for it. ``progress_batch``: the seconds a status write
        that only reports progress waits after the job's last one (0: none, every change is written at
        once); ``monotonic`` measures them."""
        self._jobs = jobs
        self._objects = objects
        self._events = events
        self._render = render_settings
        self._metrics = metrics
        self._scaler = scaler
        self._clock = clock
        self._cache = cache
        self._queueing = queueing
        self._job_objects_ready = job_objects_ready
        self._progress_batch = progress_batch
        self._monotonic = monotonic
        #: job → when its status was last written (``monotonic``), for ``progress_batch``
        self._written_at: dict[str, float] = {}
        self._validated = ValidatedJobs()
        self._live: Reads = LiveReads(jobs, objects)
        self._reads: Reads = CachedReads(cache) if cache is not None else self._live
        #: job → the permanent scale refusal last reported (one ScaleRefused Event per refusal, no retry)
        self._refused: dict[str, str] = {}

    def reconcile(self, namespace: str, name: str) -> float | None:
        """One pass; a status write that lost a race with another writer re-reads and recomputes (bounded).

        Returns the seconds after which the job must be reconciled again even if nothing changes, or None.
        """
        started = time.perf_counter()
        reads = self._reads
        try:
            if reads.cached and self._job_objects_ready is not None and not self._job_objects_ready(namespace, name):
                self._metrics.cache_behind.inc()
                return LISTING_WAIT  # the namespace's job objects are being listed: a pass now would miss them
            for attempt in range(1, STATUS_ATTEMPTS + 1):
                try:
                    return self._reconcile(namespace, name, reads)
                except StatusConflict as err:
                    self._metrics.status_conflicts.inc()
                    log.info("%s; reading it again", err, extra={"job": f"{namespace}/{name}"})
                    if attempt == STATUS_ATTEMPTS:
                        raise
                    reads = self._live
                except ConfirmLive as why:
                    self._metrics.live_confirmations.inc()
                    log.info("%s; confirming with the API server", why, extra={"job": f"{namespace}/{name}"})
                    reads = self._live
                except CacheBehind as why:
                    self._metrics.cache_behind.inc()
                    log.debug("%s; waiting for its watch event", why, extra={"job": f"{namespace}/{name}"})
                    return None
        except Exception:
            self._metrics.errors.inc()
            raise
        finally:
            self._metrics.reconcile_seconds.observe(time.perf_counter() - started)
        return None

    def _reconcile(self, namespace: str, name: str, reads: Reads) -> float | None:
        key = f"{namespace}/{name}"
        extra = {"job": key}
        body = reads.dijob(namespace, name)
        if body is None or body["metadata"].get("deletionTimestamp"):
            self._metrics.job_phase(key, None)
            self._refused.pop(key, None)
            self._written_at.pop(key, None)
            return None
        old: dict[str, Any] = dict(body.get("status") or {})
        if old.get("phase") in TERMINAL:
            self._written_at.pop(key, None)
            self._metrics.job_phase(key, old["phase"])
            return self._finished(body, old, extra, reads)
        job: DIJob | None = None
        invalid: str | None = None
        try:
            job = self._validated.load(body)
        except InvalidJobError as err:
            invalid = "; ".join(str(p) for p in err.problems)

        generation = int(body["metadata"].get("generation") or 0)
        workflow: dict[str, Any] | None = None
        membership: Membership | None = None
        foreign = False
        refused: str | None = None
        suspension = SuspendPlan()
        scaled = False
        queued: QueueState | None = None
        if job is not None and not old.get("phase"):  # a new job: Pending is recorded before its objects exist
            body = self._record_pending(body, job, generation, extra)
            old = dict(body["status"])
        if job is not None:
            queued = self._queue_state(job, reads, extra)
            workflow, membership, foreign, refused, suspension, body, scaled = self._converge(
                job, body, old, generation, extra, reads, queued
            )
        refused = self._first_report(key, refused)
        pods: list[dict[str, Any]] = []
        if workflow is not None and not foreign:
            wf_uid = workflow["metadata"].get("uid")
            pods = [p for p in reads.pods(namespace, name) if _owned_by(p, wf_uid)]
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
            success_policy=job.success_policy if job else None,
            active_deadline_seconds=job.active_deadline_seconds if job else None,
            drop_tasks=job.drop_tasks if job else frozenset(),
            min_replicas=job.min_replicas if job else None,
            suspended=suspension.message,
            held_phase=suspension.phase,
            held_cause=suspension.cause,
        )
        update = compute_status(obs, old, self._clock())
        if reads.cached and update.status["phase"] in TERMINAL:
            raise ConfirmLive(f"phase {update.status['phase']} decided from the watch cache")
        progress_wait = self._progress_wait(key, old, update)
        if progress_wait is not None:
            self._metrics.progress_deferred.inc()
            update = dataclasses.replace(update, changed=False)
        # the scaler just deleted the retired replicas' pods it could (read live): the cache may not show it yet
        seen_pods = [] if scaled else pods
        self._apply(body, update, job, workflow if not foreign else None, seen_pods, extra, suspension.action)
        due = [w for w in (update.wakeup, progress_wait, queued.retry if queued is not None else None) if w is not None]
        return min(due) if due else None

    def _progress_wait(self, key: str, old: Mapping[str, Any], update: StatusUpdate) -> float | None:
        """The seconds a status write that only reports progress (:func:`progress_only`: pod counts, a
        Pending message's count) waits, so the job's progress is written at most once per
        ``progress_batch`` seconds, as the Kubernetes Job controller batches its pod updates; the pass
        then due writes the values of its time. None: write now (the write changes more than progress,
        comes with events or drops, or the job's last write is ``progress_batch`` old)."""
        if self._progress_batch <= 0 or not update.changed or update.events or update.drops or update.restarts_added:
            return None
        last = self._written_at.get(key)
        if last is None or not progress_only(old, update.status):
            return None
        left = last + self._progress_batch - self._monotonic()
        return left if left > 0 else None

    def _queue_state(self, job: DIJob, reads: Reads, extra: Mapping[str, str]) -> QueueState | None:
        """The job's Kueue Workload (created if missing), or None when Kueue is not involved (no queue
        label, or the controller runs without ``--kueue``). spec.suspend wins: a suspended job is not queued."""
        if self._queueing is None or job.suspend:
            return None
        return self._queueing.state(job, live=not reads.cached, extra=extra)

    def _converge(
        self,
        job: DIJob,
        body: dict[str, Any],
        old: Mapping[str, Any],
        generation: int,
        extra: Mapping[str, str],
        reads: Reads,
        queued: QueueState | None = None,
    ) -> tuple[dict[str, Any] | None, Membership, bool, str | None, SuspendPlan, dict[str, Any], bool]:
        """Create the job's objects (again, on resume), or bring a running job's replicas and spec together.

        ``(workflow, membership, foreign, refused, suspension, body, scaled)``: what is there now, whether
        the Workflow belongs to another (deleted) DIJob, why a scale was refused (None: not refused), what
        ``spec.suspend`` asks, the DIJob (read again after a scale, which stamps it: the status write's
        precondition is then the stamped version), and whether the scaler ran.
        """
        namespace, name = job.namespace, job.name
        configmap = reads.configmap(namespace, membership_configmap_name(name))
        workflow = reads.workflow(namespace, workflow_name(name))
        if reads.cached:
            self._check_current(namespace, name, old, configmap, workflow)
        membership = _membership(configmap)
        foreign = workflow is not None and not _owned_by(workflow, job.uid)
        refused: str | None = None
        scaled = False
        suspension, leftover = self._suspension(job, old, workflow, foreign, membership, queued)
        if (
            queued is not None
            and queued.requeue_due
            and self._queueing is not None
            and workflow is None
            and not leftover
        ):
            # every replica of the evicted run is gone
            counts = (membership or plan_membership(job, None)).task_counts(t.name for t in job.tasks)
            self._queueing.release(job, queued, counts, extra)
        resume = suspension.action is SuspendAction.RESUME
        fresh = suspension.action is SuspendAction.NONE and workflow is None and not old.get("workflowName")
        if resume or fresh:
            source = resumed_job(job, membership) if resume and membership is not None else job
            if queued is not None and queued.view is not None and self._queueing is not None:
                source = with_placements(source, self._queueing.placements(queued.view))
            workflow, membership = self._create(source, membership, extra)
        if not foreign and not fresh and suspension.action in (SuspendAction.NONE, SuspendAction.RESUME):
            stamp = spec_generation(body)
            # on resume, replicas edited while the job was suspended are applied now
            observed = None if resume else old.get("observedGeneration")
            edit = plan_spec_edit(job, stamp, generation, observed, membership, workflow)
            if edit.action in (EditAction.SCALE, EditAction.CATCH_UP):
                refused = self._scale(namespace, name, edit.message, extra)
                scaled = refused is None
                if refused is None:  # observe what the scaler made (the watch cache may not have it yet)
                    membership = _membership(self._live.configmap(namespace, membership_configmap_name(name)))
                    workflow = self._live.workflow(namespace, workflow_name(name))
                    body = self._live.dijob(namespace, name) or body
            elif edit.action is EditAction.REFUSE:
                refused = edit.message
        return workflow, membership or plan_membership(job, None), foreign, refused, suspension, body, scaled

    def _suspension(
        self,
        job: DIJob,
        old: Mapping[str, Any],
        workflow: Mapping[str, Any] | None,
        foreign: bool,
        membership: Membership | None,
        queued: QueueState | None = None,
    ) -> tuple[SuspendPlan, int]:
        """What ``spec.suspend`` (or Kueue, through ``queued``) asks, and the pods of the held run still
        there: a resume (or the release of an evicted Workload's quota) counts them, asked of the API
        server, since it must not happen while an old pod is still going away."""
        hold = queued.hold if queued is not None else None
        leftover = 0
        started = bool(old.get("workflowName"))
        resuming = hold is None and old.get("phase") in HELD_PHASES
        releasing = queued is not None and queued.requeue_due
        if workflow is None and not job.suspend and started and (resuming or releasing):
            leftover = len(self._live.pods(job.namespace, job.name))
        replicas = len(membership.replicas) if membership else 0
        cause = queued.cause if queued is not None else None
        return plan_suspend(job.suspend, old, workflow, foreign, replicas, leftover, hold, cause), leftover

    def _check_current(
        self,
        namespace: str,
        name: str,
        old: Mapping[str, Any],
        configmap: Mapping[str, Any] | None,
        workflow: Mapping[str, Any] | None,
    ) -> None:
        """Raise :class:`CacheBehind` when the cache is behind what the status records.

        The status names a Workflow (or a membership generation) the cache does not hold yet: just
        created, or committed by a scaler, and its watch event still on the way. A missing object is
        asked of the API server, so one deleted for real is seen as gone (and the job fails).
        """
        if not old.get("workflowName"):
            return  # nothing created yet: creation reads back what already exists
        if workflow is None and self._live.workflow(namespace, workflow_name(name)) is not None:
            raise CacheBehind(f"the Workflow {workflow_name(name)} is not in the watch cache yet")
        cm_name = membership_configmap_name(name)
        if configmap is None and self._live.configmap(namespace, cm_name) is not None:
            raise CacheBehind(f"the ConfigMap {cm_name} is not in the watch cache yet")
        cached = _membership(configmap)
        recorded = old.get("membershipGeneration")
        if cached is not None and recorded is not None and cached.generation < int(recorded):
            raise CacheBehind(f"the ConfigMap {cm_name} in the watch cache is at generation {cached.generation}")

    def _record_pending(
        self, body: Mapping[str, Any], job: DIJob, generation: int, extra: Mapping[str, str]
    ) -> dict[str, Any]:
        """Write the Pending status (condition, JobPending event) of a job that has no status yet.

        Every job's history starts with Pending, as DI-orchestrator's did: a watcher sees it however
        fast the pods run, and the first condition does not depend on the controller's speed.
        Returns ``body`` with that status, so the rest of the pass writes only what changes after it.
        """
        obs = Observation(
            name=job.name,
            generation=generation,
            membership=plan_membership(job, None),
            backoff_limit=job.backoff_limit,
            workflow=None,
        )
        update = compute_status(obs, body.get("status") or {}, self._clock())
        return self._apply(body, update, None, None, [], extra)

    def _first_report(self, key: str, refused: str | None) -> str | None:
        """``refused`` the first time it is seen for the job, else None (it was reported already)."""
        if refused is None:
            self._refused.pop(key, None)
            return None
        return None if self._refused.get(key) == refused else refused

    def _scale(self, namespace: str, name: str, why: str, extra: Mapping[str, str]) -> str | None:
        """Bring spec and membership together (a hand edit, or a spec left behind by a commit).

        None when done, else why it was refused (nothing changed).

        A retryable error (:class:`dihera.errors.ScaleConflict`: resourceVersion races the scaler
        gave up on) is raised: the queue retries it with backoff. A permanent one is returned: one
        ``ScaleRefused`` Event, no retry.
        """
        log.info("%s; syncing the running job", why, extra=extra)
        try:
            result = self._scaler.scale(namespace, name, ScaleRequest.sync(), update_spec=False)
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
        suspension: SuspendAction = SuspendAction.NONE,
    ) -> dict[str, Any]:
        """Write the status (if it changed), post the events, clean up; returns the DIJob as written."""
        meta = body["metadata"]
        namespace, name = meta["namespace"], meta["name"]
        phase = update.status["phase"]
        written: dict[str, Any] = {**body, "status": dict(update.status)}
        if update.changed:
            written = self._jobs.patch_status(namespace, name, status_patch(body, update.status))
            self._written_at[f"{namespace}/{name}"] = self._monotonic()
            self._metrics.wrote("patch", "DIJob/status")
            if self._cache is not None:  # the next pass reads this write, not the version it replaced
                self._cache.replace("DIJob", body, written)
            old_phase = (body.get("status") or {}).get("phase")
            if old_phase != phase:
                log.info("phase %s -> %s: %s", old_phase or "-", phase, _message(update.status), extra=extra)
        if update.restarts_added:
            self._metrics.restarts.inc(update.restarts_added)
        self._metrics.job_phase(f"{namespace}/{name}", phase)
        for event in update.events:
            if event.reason == EventReason.SCALE_REFUSED:
                self._refused[f"{namespace}/{name}"] = event.message
            self._events.post(body, event.type, event.reason, event.message)  # counted by the recorder when sent
        # After the write: an ending is recorded before anything is stopped, so stopping replicas (which
        # Argo may report as a failed Workflow) can never turn a Succeeded job into a Failed one; a
        # cleanup that fails here is done again by the next pass (the job is finished then).
        if job is not None:
            drop_replicas(self._scaler, self._metrics, job, update.drops, extra)
            if phase not in TERMINAL and workflow is not None:
                uid = workflow["metadata"].get("uid")
                live = None if self._cache is None else lambda: self._live_pods(job, uid)
                delete_retired_pods(self._objects, self._metrics, job, workflow, pods, extra, live)
            if suspension is SuspendAction.STOP and workflow is not None:
                delete_workflow(self._objects, self._metrics, job, workflow, extra)
            self._cleanup_now(job, phase, workflow, pods, extra)
        return written

    def _live_pods(self, job: DIJob, workflow_uid: str | None) -> list[dict[str, Any]]:
        return [p for p in self._live.pods(job.namespace, job.name) if _owned_by(p, workflow_uid)]

    def _finished(
        self, body: Mapping[str, Any], status: Mapping[str, Any], extra: Mapping[str, str], reads: Reads
    ) -> float | None:
        """A finished job: cleanPodPolicy for pods still around, then ttlSecondsAfterFinished (idempotent).

        Returns the seconds until the TTL is due, or None.
        """
        try:
            job = self._validated.load(body)
        except InvalidJobError:
            return None
        self._cleanup(job, status["phase"], extra, reads)
        if self._queueing is not None:
            self._queueing.finish(job, status["phase"], _message(status), extra)
        left = seconds_left(status.get("completionTimestamp"), job.ttl_seconds_after_finished, self._clock())
        if left is None or left > 0:
            return left
        if self._jobs.delete(job.namespace, job.name, uid=job.uid):
            self._metrics.wrote("delete", "DIJob")
            log.info(
                "ttlSecondsAfterFinished %d passed since it %s; deleted the DIJob and what it owns",
                job.ttl_seconds_after_finished,
                str(status["phase"]).lower(),
                extra=extra,
            )
        return None

    def _cleanup(self, job: DIJob, phase: str, extra: Mapping[str, str], reads: Reads) -> None:
        """A finished job: honour cleanPodPolicy for pods that are still around (idempotent).

        From the watch cache: a pod it has not delivered yet is deleted by the pass its event starts.
        """
        workflow = reads.workflow(job.namespace, workflow_name(job.name))
        if workflow is None or not _owned_by(workflow, job.uid):
            return
        wf_uid = workflow["metadata"].get("uid")
        pods = reads.pods(job.namespace, job.name)
        self._cleanup_now(job, phase, workflow, [p for p in pods if _owned_by(p, wf_uid)], extra)

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
            stopped = self._objects.shutdown_workflow(job.namespace, workflow["metadata"]["name"])
            self._metrics.wrote("patch", "Workflow")
            if self._cache is not None and stopped:  # the next pass does not stop it again
                self._cache.replace("Workflow", workflow, stopped)
        self._objects.delete_pods(job.namespace, plan.delete_pods)  # concurrently: a big job has thousands
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
