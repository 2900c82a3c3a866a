"""One reconcile of one DIJob, as a recipe of named steps:

1. **observe** the job into one :class:`~dihera.controller.decide.view.JobView`
   (:mod:`~dihera.controller.observe`: the watch cache, the API server only when it must);
2. a job gone forgets its state; a **finished** one gets cleanPodPolicy, Kueue's Finished and its TTL;
3. a **new** job's Pending status is written before anything is created;
4. **converge**: create the job's objects (again, on resume), release an evicted Workload's quota, undo
   or repair what was done to them from outside (an Argo RESUBMIT's copy, a deleted Service...), never
   touching an object under the job's names that the DIJob does not own (a conflict: the job waits), sync a
   running job's replicas with its spec (:mod:`~dihera.controller.decide.converge` and
   :mod:`~dihera.controller.decide.outside` decide; :mod:`~dihera.controller.apply` writes; the view is
   observed again after each write);
5. **autoscale** a Running job's collectors from its RL figures, through the scaler
   (:mod:`~dihera.controller.autoscaler`; its decision goes into the status write);
6. **decide** the status, its Events and what must follow it (:func:`~dihera.controller.decide.status.compute_status`);
7. **apply**: one status write if it changed, the Events, then the writes the status records
   (:meth:`~dihera.controller.apply.Applier.after_status`).

Creation is idempotent: names are deterministic and "already exists" reads the object back, so a
controller restarted at any point never makes a second Workflow. A pass returns the seconds until a
time-based decision is due (``activeDeadlineSeconds``, ``ttlSecondsAfterFinished``, a Kueue retry, a
batched progress write), or None; the work queue reconciles the job again then. A steady-state pass
sends no GET or LIST (docs/controller.md, "Reading from watches").
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import time
from collections.abc import Callable, Mapping

from dihera.constants import FIGURES_SHOWN_EVERY, TERMINAL_PHASES
from dihera.controller.apply import Applier, phase_message
from dihera.controller.autoscaler import Autoscaler
from dihera.controller.decide.autoscaling import with_autoscaling
from dihera.controller.decide.converge import ConvergePlan, plan_converge, plan_edit
from dihera.controller.decide.deadline import ttl_left
from dihera.controller.decide.figures import figures_annotations
from dihera.controller.decide.hold import SuspendPlan
from dihera.controller.decide.outside import plan_outside
from dihera.controller.decide.status import StatusUpdate, compute_status, progress_only
from dihera.controller.decide.view import JobView
from dihera.controller.kueue import Queueing
from dihera.controller.metrics import Metrics
from dihera.controller.observe import CacheBehind, CachedReads, LiveReads, Observer, Reads
from dihera.controller.validated import ValidatedJobs
from dihera.kube.jobs import StatusConflict
from dihera.kube.watch import Store
from dihera.membership import plan_membership
from dihera.objects import metadata, owned_by
from dihera.queueing import with_placements
from dihera.rl.autoscale import AutoscaleDecision
from dihera.scaling import EditAction
from dihera.shapes.configmap import as_configmap
from dihera.shapes.pod import Pod
from dihera.shapes.service import as_service
from dihera.shapes.workflow import as_workflow

__all__ = ["CacheBehind", "ConfirmLive", "Reconciler", "utc_now"]

log = logging.getLogger("dihera.controller")
#: Reads-and-recomputes of one reconcile whose status write met another writer, before the queue retries.
STATUS_ATTEMPTS = 5
#: Seconds until a pass that found its namespace's job objects still being listed runs again, at the
#: latest: the end of the listing queues it at once (:meth:`dihera.kube.watch.Watches.ready`).
LISTING_WAIT = 1.0


class ConfirmLive(Exception):
    """A decision from the watch cache that cannot be undone (a terminal phase): read from the API and decide again."""


def utc_now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Reconciler:
    """Reconciles DIJobs by name; keeps no per-job state besides when each job's status was last written
    (progress batching), when its figures were last shown in the Argo UI and the scale refusal last reported
    (one Event per refusal)."""

    def __init__(
        self,
        applier: Applier,
        metrics: Metrics,
        clock: Callable[[], str] = utc_now,
        cache: Store | None = None,
        queueing: Queueing | None = None,
        job_objects_ready: Callable[[str, str], bool] | None = None,
        progress_batch: float = 0.0,
        monotonic: Callable[[], float] = time.monotonic,
        autoscaler: Autoscaler | None = None,
    ) -> None:
        """``cache``: read from the watches (None: every read goes to the API server); ``queueing``: Kueue's
        side of jobs labelled ``kueue.x-k8s.io/queue-name`` (None: the label is ignored);
        ``job_objects_ready(namespace, job)``: whether the cache holds the namespace's pods, Workflows and
        ConfigMaps (starting their watches, which queue the job again when they are in); a pass from the
        cache waits for it. ``progress_batch``: the seconds a status write that only reports progress
        waits after the job's last one (0: none); ``monotonic`` measures them. ``autoscaler``: sizes the
        collectors of jobs with ``autoscaling`` (None: their counts change only when asked)."""
        self._apply = applier
        self._metrics = metrics
        self._clock = clock
        self._queueing = queueing
        self._job_objects_ready = job_objects_ready
        self._progress_batch = progress_batch
        self._monotonic = monotonic
        self._autoscaler = autoscaler
        live: Reads = LiveReads(applier.jobs, applier.objects)
        self._live = live
        self._reads: Reads = CachedReads(cache) if cache is not None else live
        self._observe = Observer(live, ValidatedJobs(), queueing)
        #: job → when its status was last written (``monotonic``), for ``progress_batch``
        self._written_at: dict[str, float] = {}
        #: job → the permanent scale refusal last reported (one ScaleRefused Event per refusal, no retry)
        self._refused: dict[str, str] = {}
        #: job → when its RL figures were last written to its Workflow (``monotonic``, FIGURES_SHOWN_EVERY)
        self._shown_at: dict[str, float] = {}

    def reconcile(self, namespace: str, name: str) -> float | None:
        """One pass; a status write that lost a race with another writer re-reads and recomputes (bounded).

        Returns the seconds after which the job must be reconciled again even if nothing changes, or None.
        """
        started = time.perf_counter()
        try:
            return self._attempts(namespace, name)
        except Exception:
            self._metrics.errors.inc()
            raise
        finally:
            self._metrics.reconcile_seconds.observe(time.perf_counter() - started)

    def _attempts(self, namespace: str, name: str) -> float | None:
        reads = self._reads
        extra = {"job": f"{namespace}/{name}"}
        if reads.cached and self._job_objects_ready is not None and not self._job_objects_ready(namespace, name):
            self._metrics.cache_behind.inc()
            return LISTING_WAIT  # the namespace's job objects are being listed: a pass now would miss them
        for attempt in range(1, STATUS_ATTEMPTS + 1):
            try:
                return self._pass(namespace, name, reads)
            except StatusConflict as err:
                self._metrics.status_conflicts.inc()
                log.info("%s; reading it again", err, extra=extra)
                if attempt == STATUS_ATTEMPTS:
                    raise
                reads = self._live
            except ConfirmLive as why:
                self._metrics.live_confirmations.inc()
                log.info("%s; confirming with the API server", why, extra=extra)
                reads = self._live
            except CacheBehind as why:
                self._metrics.cache_behind.inc()
                log.debug("%s; waiting for its watch event", why, extra=extra)
                return None
        return None

    # -- the recipe

    def _pass(self, namespace: str, name: str, reads: Reads) -> float | None:
        body = reads.dijob(namespace, name)
        if body is None or body["metadata"].get("deletionTimestamp"):
            self._forget(f"{namespace}/{name}")
            return None
        extra = {"job": f"{namespace}/{name}"}
        if (body.get("status") or {}).get("phase") in TERMINAL_PHASES:
            return self._finished(self._observe.finished_view(body, reads), extra)
        view = self._observe.view(body, reads, extra)
        if view.job is None:  # invalid: nothing is created, the status says why
            self._refused.pop(view.key, None)
            return self._decide_and_apply(view, SuspendPlan(), None, extra)
        if view.phase is None:  # a new job: Pending is recorded before its objects exist
            view = self._record_pending(view, extra)
        plan = plan_converge(view)
        view = self._converge(view, plan, reads, extra)
        view = self._undo_outside(view, extra)
        view, refused = self._sync_replicas(view, plan, reads, extra)
        view, grow = self._grow_back(view, reads, extra)
        view, autoscaled = self._autoscale(view, reads, extra, shrunk=grow is not None)
        retry = view.queue.retry if view.queue is not None else None
        due = self._decide_and_apply(view, plan.hold, refused, extra, autoscaled)
        recheck = autoscaled.recheck_after if autoscaled is not None else None
        shown = self._show_figures(view, extra)
        return min((w for w in (due, retry, grow, recheck, shown) if w is not None), default=None)

    def _forget(self, key: str) -> None:
        self._metrics.job_phase(key, None)
        self._refused.pop(key, None)
        self._written_at.pop(key, None)
        self._shown_at.pop(key, None)
        if self._autoscaler is not None:
            self._autoscaler.forget(key)

    def _record_pending(self, view: JobView, extra: Mapping[str, str]) -> JobView:
        """Write the Pending status (condition, JobPending event) of a job that has no status yet.

        Every job's history starts with Pending, as DI-orchestrator's did: a watcher sees it however
        fast the pods run, and the first condition does not depend on the controller's speed.
        """
        before = dataclasses.replace(view, membership=None, workflow=None, foreign=False, pods=(), queue=None)
        update = compute_status(before, SuspendPlan(), self._clock())
        written = self._apply.status(view.body, update, extra)
        self._written_at[view.key] = self._monotonic()
        return dataclasses.replace(view, body=written)

    def _converge(self, view: JobView, plan: ConvergePlan, reads: Reads, extra: Mapping[str, str]) -> JobView:
        """Release an evicted Workload's quota, create the job's objects (again, on resume): ``plan`` says."""
        job = view.job
        assert job is not None
        if plan.release and self._queueing is not None and view.queue is not None:
            counts = (view.membership or plan_membership(job, None)).task_counts(t.name for t in job.tasks)
            self._queueing.release(job, view.queue, counts, extra)  # every replica of the evicted run is gone
        if plan.create is None:
            return view
        source = plan.create
        queue = view.queue
        if queue is not None and queue.view is not None and self._queueing is not None:
            source = with_placements(source, self._queueing.placements(queue.view))
        made = self._apply.create(source, view.membership, extra)
        if made.conflicts:  # nothing runs: the Workflow was not created (the status says why)
            return self._observe.with_pods(view.with_conflicts(*made.conflicts), reads)
        objects = made.objects
        created = dataclasses.replace(
            view,
            workflow=as_workflow(objects["Workflow"]),
            membership=made.membership,
            configmap=as_configmap(objects["ConfigMap"]),
            service=as_service(objects["Service"]),
            foreign=False,
        )
        return self._observe.with_pods(created, reads)

    def _undo_outside(self, view: JobView, extra: Mapping[str, str]) -> JobView:
        """What was done to the job's objects from outside dihera, undone or repaired
        (:mod:`~dihera.controller.decide.outside` decides)."""
        plan = plan_outside(view, self._apply.render_settings)
        return view if plan.empty else self._apply.undo_outside(view, plan, extra)

    def _sync_replicas(
        self, view: JobView, plan: ConvergePlan, reads: Reads, extra: Mapping[str, str]
    ) -> tuple[JobView, str | None]:
        """Bring a running job's replicas and its spec together; the view of what the scaler made, and why
        a hand edit was refused the first time it is seen (None: not refused, or reported already)."""
        edit = plan_edit(view, plan)
        refused = None
        if edit.action in (EditAction.SCALE, EditAction.CATCH_UP):
            refused = self._apply.sync_replicas(view, edit.message, extra)
            if refused is None:  # observe what the scaler made (the watch cache may not have it yet)
                view = self._observe.after_scale(view, reads)
        elif edit.action is EditAction.REFUSE:
            refused = edit.message
        return view, self._first_report(view.key, refused)

    def _grow_back(self, view: JobView, reads: Reads, extra: Mapping[str, str]) -> tuple[JobView, float | None]:
        """A job that gave collectors back to a higher-priority Workload takes them back once the quota is free
        (docs/queueing.md, "Shrink before eviction"); the view of what the scaler made, and when to look again."""
        if self._queueing is None or view.job is None or view.queue is None:
            return view, None
        if view.scaled:  # view.job is the spec before this pass's sync: look again next pass
            return view, self._queueing.grow_back_poll(view.job)
        grown, retry = self._queueing.grow_back(view.job, view.body, extra)
        return (self._observe.after_scale(view, reads) if grown else view), retry

    def _autoscale(
        self, view: JobView, reads: Reads, extra: Mapping[str, str], shrunk: bool = False
    ) -> tuple[JobView, AutoscaleDecision | None]:
        """Size a Running job's autoscaled collectors (:mod:`~dihera.controller.autoscaler`); the view of
        what a change made, and the decision to record in the status. Not while the job has collectors given
        back to a higher-priority Workload (``shrunk``): that quota is not the job's to grow into."""
        if self._autoscaler is None or shrunk:
            return view, None
        decision = self._autoscaler.step(view, extra)
        if decision is not None and decision.changed:
            view = self._observe.after_scale(view, reads)
        return view, decision

    def _decide_and_apply(
        self,
        view: JobView,
        hold: SuspendPlan,
        refused: str | None,
        extra: Mapping[str, str],
        autoscaled: AutoscaleDecision | None = None,
    ) -> float | None:
        """Decide the status from the view (and collector autoscaling's decision), write it (or leave a
        progress-only change to a later pass), then the writes it records; the seconds until the job's next
        timed pass."""
        now = self._clock()
        update = compute_status(view, hold, now, refused)
        if update.phase not in TERMINAL_PHASES:
            update = with_autoscaling(update, autoscaled, now)
        if view.cached and update.phase in TERMINAL_PHASES:
            raise ConfirmLive(f"phase {update.phase} decided from the watch cache")
        progress_wait = self._progress_wait(view, update)
        if progress_wait is not None:
            self._metrics.progress_deferred.inc()
            update = dataclasses.replace(update, changed=False)
        self._apply.status(view.body, update, extra)
        if update.changed:
            self._written_at[view.key] = self._monotonic()
        if refused is not None:
            self._refused[view.key] = refused
        self._metrics.job_phase(view.key, update.phase)
        live = None if not view.cached else lambda: self._live_pods(view)
        self._apply.after_status(view, update, hold.action, live, extra)
        due = [w for w in (update.wakeup, progress_wait) if w is not None]
        return min(due) if due else None

    def _show_figures(self, view: JobView, extra: Mapping[str, str]) -> float | None:
        """Show the job's RL figures in the Argo UI (:mod:`~dihera.controller.decide.figures`), at most once
        per :data:`~dihera.constants.FIGURES_SHOWN_EVERY` seconds per job; the seconds until it may again."""
        annotations = figures_annotations(view)
        if annotations is None or view.workflow is None:
            return None
        wait = self._shown_at.get(view.key, -FIGURES_SHOWN_EVERY) + FIGURES_SHOWN_EVERY - self._monotonic()
        if wait > 0:
            return wait
        if self._apply.show_figures(view.workflow, annotations, extra):
            self._shown_at[view.key] = self._monotonic()
            return None
        return 1.0  # the Workflow changed under the decision: decide again from the newer version

    # -- steps' helpers

    def _progress_wait(self, view: JobView, update: StatusUpdate) -> float | None:
        """The seconds a status write that only reports progress (:func:`progress_only`: pod counts, a
        Pending message's count) waits, so the job's progress is written at most once per
        ``progress_batch`` seconds, as the Kubernetes Job controller batches its pod updates; the pass
        then due writes the values of its time. None: write now (the write changes more than progress,
        comes with events or drops, or the job's last write is ``progress_batch`` old)."""
        if self._progress_batch <= 0 or not update.changed or update.events or update.drops or update.restarts_added:
            return None
        last = self._written_at.get(view.key)
        if last is None or not progress_only(view.status, update.status):
            return None
        left = last + self._progress_batch - self._monotonic()
        return left if left > 0 else None

    def _first_report(self, key: str, refused: str | None) -> str | None:
        """``refused`` the first time it is seen for the job, else None (it was reported already)."""
        if refused is None:
            self._refused.pop(key, None)
            return None
        return None if self._refused.get(key) == refused else refused

    def _live_pods(self, view: JobView) -> list[Pod]:
        uid = metadata(view.ours).get("uid")
        return [p for p in self._live.pods(view.namespace, view.name) if owned_by(p, uid)]

    def _finished(self, view: JobView, extra: Mapping[str, str]) -> float | None:
        """A finished job: the artifacts its replicas stored since (status.artifacts, the one field written
        after the end), cleanPodPolicy for pods still around, Kueue's Finished, then ttlSecondsAfterFinished
        (idempotent). Returns the seconds until the TTL is due, or None."""
        self._written_at.pop(view.key, None)
        self._metrics.job_phase(view.key, view.phase)
        job = view.job
        if job is None:
            return None
        late = compute_status(view, SuspendPlan(), self._clock())
        if late.changed:
            self._apply.status(view.body, late, extra)
        if view.ours is not None:
            self._apply.cleanup(job, str(view.phase), view.ours, view.pods, extra)
        if self._queueing is not None:
            self._queueing.finish(job, str(view.phase), phase_message(view.status), extra)
        left = ttl_left(job, view.status, self._clock())
        if left is None or left > 0:
            return left
        if self._apply.delete_job(job):
            log.info(
                "ttlSecondsAfterFinished %d passed since it %s; deleted the DIJob and what it owns",
                job.ttl_seconds_after_finished,
                str(view.phase).lower(),
                extra=extra,
            )
        return None
