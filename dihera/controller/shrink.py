"""Shrink before eviction, the controller's side (docs/queueing.md, "Shrink before eviction").

Before the controller creates a queued job's Workload (or while that Workload waits), it asks whether the
job fits in its ClusterQueue's free quota; when it does not but collectors of running, preemptible jobs of
lower priority in the same ClusterQueue would free enough, it gives those back first, through the same
``JobScaler`` as a scale request (membership, Workflow, retired pods, spec, then the quota back to Kueue as
the Workload's ``reclaimablePods``), and waits until Kueue's ClusterQueue shows the quota free. Only then is
the Workload created: Kueue admits it from free quota and has no Workload to preempt for. A shrunk job
remembers its counts (``diengine/shrunk-from``) and takes its collectors back, by a scale-up that Kueue must
admit (a slice Workload), once its ClusterQueue has the quota again and no higher-priority Workload of
dihera waits there. What to shrink and grow is decided in :mod:`dihera.queueing.shrink` (pure).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from decimal import Decimal
from itertools import groupby
from typing import Any, Protocol

from dihera.constants import (
    ANNOTATION_SHRUNK_FROM,
    ANNOTATION_WORKLOAD_SLICE,
    EVENT_NORMAL,
    EVENT_WARNING,
    LABEL_JOB,
    EventReason,
    Phase,
)
from dihera.errors import InvalidJobError, ScaleError
from dihera.model import DIJob
from dihera.objects import metadata
from dihera.queueing import view_workload, workload_name
from dihera.queueing.shrink import (
    Grow,
    Shrink,
    Victim,
    cluster_queue_free,
    describe_amounts,
    grown_annotation,
    plan_grow,
    plan_shrink,
    pod_requests,
    shortfall,
    shrunk_annotation,
    shrunk_from,
    victim_of,
    workload_requests,
)
from dihera.scaling import ScaleRequest
from dihera.schema import API_VERSION, KIND
from dihera.shapes.dijob import as_dijob
from dihera.shapes.workload import as_workload
from dihera.validation import load_job

__all__ = ["GROW_POLL", "SETTLE_POLL", "SETTLE_WAIT", "QueueReads", "Shrinker", "all_workloads", "waits_for_quota"]

log = logging.getLogger("dihera.controller")
#: Seconds between two looks of a shrunk job at its ClusterQueue's free quota (its grow back's delay at most).
GROW_POLL = 5.0
#: Seconds a shrink waits for Kueue's ClusterQueue to show the quota given back, and between two reads of it.
SETTLE_WAIT = 15.0
SETTLE_POLL = 0.25


class QueueReads(Protocol):
    """What the shrinker needs of :class:`dihera.kube.queues.QueueStore`."""

    def local_queue(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    def cluster_queue(self, name: str) -> dict[str, Any] | None: ...

    def annotate_job(self, namespace: str, name: str, key: str, value: str | None) -> bool: ...


class Scaler(Protocol):
    def scale(self, namespace: str, name: str, request: ScaleRequest, *, update_spec: bool = True) -> object: ...


def _cluster_queue_of(workload: Mapping[str, object]) -> str | None:
    return ((as_workload(workload).get("status") or {}).get("admission") or {}).get("clusterQueue")


def _is_slice(workload: Mapping[str, object]) -> bool:
    return ANNOTATION_WORKLOAD_SLICE in ((as_workload(workload).get("metadata") or {}).get("annotations") or {})


def waits_for_quota(workload: Mapping[str, object]) -> bool:
    """Waiting for quota: neither reserved nor admitted, not evicted, not finished."""
    view = view_workload(workload)
    return not view.admitted and not view.reserved and view.evicted is None and not view.finished


def _priority(workload: Mapping[str, object]) -> int:
    return int((as_workload(workload).get("spec") or {}).get("priority") or 0)


def _ref(workload: Mapping[str, object]) -> str:
    meta = as_workload(workload).get("metadata") or {}
    return f"{meta.get('namespace')}/{meta.get('name')}"


class Shrinker:
    """One per controller. ``queues``: Kueue's queues and the DIJob annotation; ``workloads()``: every Workload
    of dihera in the watch cache; ``job_body(namespace, name)``: a DIJob from the cache; ``scaler``: the
    controller's JobScaler; ``post(body, type, reason, message)``: an Event about a DIJob."""

    def __init__(
        self,
        queues: QueueReads,
        workloads: Callable[[], Sequence[Mapping[str, object]]],
        job_body: Callable[[str, str], Mapping[str, object] | None],
        scaler: Scaler,
        post: Callable[[Mapping[str, object], str, str, str], None],
        settle_wait: float = SETTLE_WAIT,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._queues, self._workloads, self._job_body = queues, workloads, job_body
        self._scaler, self._post = scaler, post
        self._settle_wait, self._sleep, self._clock = settle_wait, sleep, clock
        #: waiting job → when collectors were last given back for it: a ClusterQueue status still behind then
        #: must not make the next pass give back more (one shrink per job per two settle waits)
        self._made_room: dict[str, float] = {}

    # -- making room for a waiting Workload

    def make_room(self, job: DIJob, workload: Mapping[str, object], extra: Mapping[str, str]) -> bool:
        """Give back collectors so ``workload`` (``job``'s, about to be created or waiting) fits in its
        ClusterQueue; True when some were given back. Nothing when it fits already or when giving back every
        collector above its minimum would not be enough (Kueue's preemption applies then)."""
        last = self._made_room.get(job.id)
        if last is not None and self._clock() - last < 2 * self._settle_wait:
            return False
        found = self._cluster_queue(job.namespace, workload)
        if found is None:
            return False
        cq_name, cq = found
        needed, free = workload_requests(workload), cluster_queue_free(cq)
        victims = self._victims(cq_name, job)
        plan = plan_shrink(needed, free, _priority(workload), victims)
        lacked = describe_amounts(shortfall(needed, free))
        if not plan:
            if plan is None and victims:
                log.info(
                    "ClusterQueue %s lacks %s; collectors cannot free it: Kueue decides", cq_name, lacked, extra=extra
                )
            return False
        why = f"Workload {_ref(workload)} (priority {_priority(workload)}) fits in ClusterQueue {cq_name}"
        why += f" (it lacked {lacked})"
        done: list[Shrink] = []
        for _, group in groupby(plan, key=lambda s: (s.namespace, s.name)):
            done.extend(self._shrink(list(group), why))
        if done:
            self._made_room_for(job, done, cq_name, needed, extra)
        return bool(done)

    def _cluster_queue(self, namespace: str, workload: Mapping[str, object]) -> tuple[str, dict[str, Any]] | None:
        """The name and the object of the ClusterQueue the Workload's LocalQueue feeds (None: none)."""
        local = self._queues.local_queue(namespace, str((as_workload(workload).get("spec") or {}).get("queueName")))
        cq_name = ((local or {}).get("spec") or {}).get("clusterQueue")
        cq = self._queues.cluster_queue(str(cq_name)) if cq_name else None
        return (str(cq_name), cq) if cq is not None else None

    def _made_room_for(
        self, job: DIJob, done: Sequence[Shrink], cq_name: str, needed: Mapping[str, Decimal], extra: Mapping[str, str]
    ) -> None:
        """Remember it, tell the waiting job, and wait for Kueue to show the quota free."""
        now = self._clock()
        self._made_room = {k: t for k, t in self._made_room.items() if now - t < 2 * self._settle_wait}
        self._made_room[job.id] = now
        given = ", ".join(f"{s.namespace}/{s.name} {s.task} {s.before} -> {s.after}" for s in done)
        message = f"made room without an eviction: {given}"
        self._post(_body_of(job), EVENT_NORMAL, EventReason.COLLECTORS_SHRUNK, message)
        settled = self._settle(cq_name, needed)
        how = "has the quota" if settled else f"does not show it free after {self._settle_wait:g}s"
        log.info("gave back %s; ClusterQueue %s %s", given, cq_name, how, extra=extra)

    def _victims(self, cq_name: str, waiting: DIJob) -> list[Victim]:
        """The running, preemptible jobs whose Workload is admitted in ClusterQueue ``cq_name``."""
        out: list[Victim] = []
        for wl in self._workloads():
            meta = metadata(wl)
            ns, name = meta.get("namespace"), (meta.get("labels") or {}).get(LABEL_JOB)
            if _is_slice(wl) or _cluster_queue_of(wl) != cq_name or not view_workload(wl).admitted:
                continue
            if not ns or not name or (ns, name) == (waiting.namespace, waiting.name):
                continue
            body = self._job_body(ns, name)
            if body is None or (as_dijob(body).get("status") or {}).get("phase") != Phase.RUNNING:
                continue
            try:
                job = load_job(body)
            except InvalidJobError:
                continue
            if job.preemptible:
                out.append(victim_of(job, _priority(wl)))
        return out

    def _shrink(self, shrinks: Sequence[Shrink], why: str) -> list[Shrink]:
        """Give back one job's collectors, then record what it grows back to; the shrinks made.

        The annotation is written after the scale, whose spec write comes first: a pass of the job that
        reads the annotation reads the shrunk spec with it (one object), so it never takes the spec's old
        count for a grow back already done. A crash between the two leaves the job shrunk (no grow back)."""
        ns, name = shrinks[0].namespace, shrinks[0].name
        body = self._job_body(ns, name)
        if body is None:
            return []
        done: list[Shrink] = []
        for s in shrinks:
            try:
                self._scaler.scale(ns, name, ScaleRequest.set_replicas(s.task, s.after))
            except ScaleError as err:
                message = f"giving back {s.given_back} {s.task} replica(s) failed ({err}); Kueue may preempt the job"
                self._post(body, EVENT_WARNING, EventReason.SHRINK_FAILED, message)
                continue
            done.append(s)
            message = (
                f"gave back {s.given_back} {s.task} replica(s) ({s.before} -> {s.after}) so that {why}, "
                f"instead of being evicted; they come back when the quota is free"
            )
            self._post(body, EVENT_NORMAL, EventReason.COLLECTORS_SHRUNK, message)
        if done:
            annotations = metadata(body).get("annotations") or {}
            self._queues.annotate_job(ns, name, ANNOTATION_SHRUNK_FROM, shrunk_annotation(annotations, done))
        return done

    def _settle(self, cq_name: str, needed: Mapping[str, Decimal]) -> bool:
        """Wait (bounded) until the ClusterQueue's status shows ``needed`` free: Kueue has taken the given-back
        quota into account, and the Workload created next is admitted without a preemption."""
        deadline = self._clock() + self._settle_wait
        while True:
            cq = self._queues.cluster_queue(cq_name)
            if cq is None or not shortfall(needed, cluster_queue_free(cq)):
                return True
            if self._clock() >= deadline:
                return False
            self._sleep(SETTLE_POLL)

    # -- growing back

    def grow_back(self, job: DIJob, body: Mapping[str, object], extra: Mapping[str, str]) -> tuple[bool, float | None]:
        """A shrunk, running job: take collectors back as far as its ClusterQueue's free quota holds.
        ``(grown, retry)``: whether it scaled, and the seconds before it looks again (None: not shrunk)."""
        wanted = shrunk_from(job.annotations)
        if not wanted:
            return False, None
        found = self._admitted_in(job, body)
        if found is None:
            return False, GROW_POLL
        own, cq_name, cq = found
        live = {t.name: t.replicas for t in job.tasks}
        per = {t.name: pod_requests(t.template) for t in job.tasks}
        plan = plan_grow(wanted, live, per, cluster_queue_free(cq), self._higher_waiting(cq_name, _priority(own)))
        grown = False
        for g in plan:
            if self._grow(job, body, g, f"ClusterQueue {cq_name} has the quota again", wanted[g.task], extra):
                grown = True
                live[g.task] = g.after
        left = grown_annotation(job.annotations, live)
        if left != job.annotations.get(ANNOTATION_SHRUNK_FROM):
            self._queues.annotate_job(job.namespace, job.name, ANNOTATION_SHRUNK_FROM, left)
        return grown, (GROW_POLL if left is not None else None)

    def _admitted_in(
        self, job: DIJob, body: Mapping[str, object]
    ) -> tuple[Mapping[str, object], str, dict[str, Any]] | None:
        """A running job's Workload, its ClusterQueue's name and the ClusterQueue (None: not running, or
        not admitted)."""
        if (as_dijob(body).get("status") or {}).get("phase") != Phase.RUNNING:
            return None
        own = next((w for w in self._workloads() if _ref(w) == f"{job.namespace}/{workload_name(job.name)}"), None)
        cq_name = _cluster_queue_of(own) if own is not None else None
        if own is None or not cq_name:
            return None
        cq = self._queues.cluster_queue(cq_name)
        return (own, cq_name, cq) if cq is not None else None

    def _grow(
        self, job: DIJob, body: Mapping[str, object], g: Grow, why: str, of: int, extra: Mapping[str, str]
    ) -> bool:
        """One task's scale-up (Kueue must admit the added replicas: a refusal waits for the next look)."""
        try:
            self._scaler.scale(job.namespace, job.name, ScaleRequest.set_replicas(g.task, g.after))
        except ScaleError as err:
            log.info("growing %s back to %d not yet: %s", g.task, g.after, err, extra=extra)
            return False
        message = f"took back {g.after - g.before} {g.task} replica(s) ({g.before} -> {g.after} of {of}): {why}"
        self._post(body, EVENT_NORMAL, EventReason.COLLECTORS_GROWN_BACK, message)
        return True

    def _higher_waiting(self, cq_name: str, priority: int) -> bool:
        """Whether a Workload of dihera of higher priority waits for quota in ClusterQueue ``cq_name``."""
        queues: dict[tuple[str, str], str | None] = {}
        for wl in self._workloads():
            if _priority(wl) <= priority or not waits_for_quota(wl):
                continue
            key = (str(metadata(wl).get("namespace")), str((as_workload(wl).get("spec") or {}).get("queueName")))
            if key not in queues:
                local = self._queues.local_queue(*key)
                queues[key] = ((local or {}).get("spec") or {}).get("clusterQueue")
            if queues[key] == cq_name:
                return True
        return False


def _body_of(job: DIJob) -> dict[str, object]:
    """The fields of a DIJob an Event's ``involvedObject`` names."""
    meta = {"name": job.name, "namespace": job.namespace, "uid": job.uid}
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": meta}


def all_workloads(
    namespaces: Callable[[], Iterable[str]], labelled: Callable[[str], Sequence[Mapping[str, object]]]
) -> Callable[[], list[Mapping[str, object]]]:
    """Every Workload of dihera the watch cache holds, namespace by namespace."""
    return lambda: [w for ns in sorted(namespaces()) for w in labelled(ns)]
