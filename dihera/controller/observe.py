"""Observe a job into one :class:`~dihera.controller.decide.view.JobView`: the DIJob, its membership
ConfigMap, its Workflow, its pods and (queued with Kueue) its Workload, read from the watch layer's store
or from the API server.

:class:`CachedReads` costs no request, :class:`LiveReads` one GET or LIST each. A pass reads from the
store and goes to the API server only when the store cannot be trusted to be current enough for the
decision at hand: a Workflow or ConfigMap the status already records that the store has not delivered
yet (:class:`CacheBehind`: the pass writes nothing and waits for its watch event), the pods of a held run
that a resume must outlive, and what a scaler just wrote (docs/controller.md, "Reading from watches").
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from typing import Protocol

from dihera.constants import LABEL_JOB
from dihera.controller.decide.hold import leftover_counted
from dihera.controller.decide.ownership import Conflict, conflict, owns
from dihera.controller.decide.view import JobView
from dihera.controller.kueue import Queueing
from dihera.controller.validated import ValidatedJobs
from dihera.errors import InvalidJobError
from dihera.kube.watch import Store
from dihera.membership import Membership
from dihera.model import DIJob
from dihera.naming import membership_configmap_name, service_name, workflow_name
from dihera.objects import metadata, owned_by
from dihera.render.env import MEMBERSHIP_FILE
from dihera.shapes.configmap import ConfigMap, as_configmap
from dihera.shapes.dijob import DIJobObject, as_dijob
from dihera.shapes.pod import Pod, as_pod
from dihera.shapes.service import Service, as_service
from dihera.shapes.workflow import Workflow, as_workflow

__all__ = ["CacheBehind", "CachedReads", "JobReader", "LiveReads", "ObjectReader", "Observer", "Reads"]


class CacheBehind(Exception):
    """The watch cache has not delivered an object the job's status already records: the pass writes
    nothing; that object's watch event queues the job again."""


class JobReader(Protocol):
    def get(self, namespace: str, name: str) -> DIJobObject | None: ...


class ObjectReader(Protocol):
    """The API server's answers as served (:class:`~dihera.kube.objects.ObjectStore`): raw, read through
    :mod:`dihera.shapes`' views by :class:`LiveReads`."""

    def get_configmap(self, namespace: str, name: str) -> Mapping[str, object] | None: ...

    def get_workflow(self, namespace: str, name: str) -> Mapping[str, object] | None: ...

    def list_pods(self, namespace: str, selector: str) -> Sequence[Mapping[str, object]]: ...

    def get_service(self, namespace: str, name: str) -> Mapping[str, object] | None: ...

    def list_workflows(self, namespace: str, selector: str) -> Sequence[Mapping[str, object]]: ...


class Reads(Protocol):
    #: True when answers come from the watch cache (possibly behind the API server).
    cached: bool

    def dijob(self, namespace: str, name: str) -> DIJobObject | None: ...

    def configmap(self, namespace: str, name: str) -> ConfigMap | None: ...

    def workflow(self, namespace: str, name: str) -> Workflow | None: ...

    def pods(self, namespace: str, job: str) -> list[Pod]: ...

    def service(self, namespace: str, name: str) -> Service | None: ...

    def workflows(self, namespace: str, job: str) -> list[Workflow]:
        """Every Workflow labelled with the job (its own, and copies of it)."""
        ...


class LiveReads:
    """Reads through the API (``JobStore`` and ``ObjectStore``)."""

    cached = False

    def __init__(self, jobs: JobReader, objects: ObjectReader) -> None:
        self._jobs, self._objects = jobs, objects

    def dijob(self, namespace: str, name: str) -> DIJobObject | None:
        return self._jobs.get(namespace, name)

    def configmap(self, namespace: str, name: str) -> ConfigMap | None:
        found = self._objects.get_configmap(namespace, name)
        return None if found is None else as_configmap(found)

    def workflow(self, namespace: str, name: str) -> Workflow | None:
        found = self._objects.get_workflow(namespace, name)
        return None if found is None else as_workflow(found)

    def pods(self, namespace: str, job: str) -> list[Pod]:
        return [as_pod(p) for p in self._objects.list_pods(namespace, f"{LABEL_JOB}={job}")]

    def service(self, namespace: str, name: str) -> Service | None:
        found = self._objects.get_service(namespace, name)
        return None if found is None else as_service(found)

    def workflows(self, namespace: str, job: str) -> list[Workflow]:
        return [as_workflow(w) for w in self._objects.list_workflows(namespace, f"{LABEL_JOB}={job}")]


class CachedReads:
    """Reads from the watch layer's :class:`~dihera.kube.watch.Store`."""

    cached = True

    def __init__(self, cache: Store) -> None:
        self.cache = cache

    def dijob(self, namespace: str, name: str) -> DIJobObject | None:
        found = self.cache.get("DIJob", namespace, name)
        return None if found is None else as_dijob(found)

    def configmap(self, namespace: str, name: str) -> ConfigMap | None:
        return self.cache.get("ConfigMap", namespace, name)

    def workflow(self, namespace: str, name: str) -> Workflow | None:
        return self.cache.get("Workflow", namespace, name)

    def pods(self, namespace: str, job: str) -> list[Pod]:
        return self.cache.pods(namespace, job)

    def service(self, namespace: str, name: str) -> Service | None:
        return self.cache.get("Service", namespace, name)

    def workflows(self, namespace: str, job: str) -> list[Workflow]:
        return self.cache.of_job("Workflow", namespace, job)


def membership_of(configmap: ConfigMap | None) -> Membership | None:
    """The membership a ConfigMap holds; None when it has no ``membership.json`` or an unreadable one (edited
    by hand: the pass rebuilds it from the Workflow, :meth:`~dihera.controller.apply.Applier.repairs`)."""
    text = (configmap or {}).get("data", {}).get(MEMBERSHIP_FILE)
    if not text:
        return None
    try:
        return _parse_membership(text)
    except (ValueError, KeyError, TypeError):
        return None


@functools.lru_cache(maxsize=64)
def _parse_membership(text: str) -> Membership:
    """A membership is parsed once per ConfigMap version (a 2,000-replica one is 90 KB of JSON), not per pass."""
    return Membership.from_json(text)


def _conflicts(job: DIJob, *found: Mapping[str, object] | None) -> list[Conflict]:
    """The conflicts among ``found``: the job's ConfigMap, Service and Workflow as read (None: none)."""
    kinds = ("ConfigMap", "Service", "Workflow")
    return [c for k, o in zip(kinds, found, strict=True) if o and (c := conflict(k, o, job.name, job.uid))]


def _copies(job: DIJob, workflows: Sequence[Workflow]) -> tuple[Workflow, ...]:
    """The Workflows labelled with the job but its own that the DIJob owns: an Argo RESUBMIT's copy keeps the
    ownerReferences; one without ours is not the job's (anyone may label a Workflow)."""
    own = workflow_name(job.name)
    return tuple(w for w in workflows if metadata(w).get("name") != own and owned_by(w, job.uid))


def _of_a_run(pod: Pod, workflow: str) -> bool:
    """Whether ``pod`` belongs to a run of the job: owned by a Workflow of the job's Workflow's name (a held
    run's, deleted: the pod goes with it). A pod anyone labelled like the job's is not waited for."""
    refs = metadata(pod).get("ownerReferences", [])
    return any(r.get("kind") == "Workflow" and r.get("name") == workflow for r in refs)


def _clashes(conflicts: Sequence[Conflict], kind: str) -> bool:
    return any(c.kind == kind for c in conflicts)


class Observer:
    """Builds job views; ``live`` answers from the API server whatever ``reads`` a pass uses."""

    def __init__(self, live: Reads, validated: ValidatedJobs, queueing: Queueing | None = None) -> None:
        self.live = live
        self._validated = validated
        self._queueing = queueing

    def view(self, body: DIJobObject, reads: Reads, extra: Mapping[str, str]) -> JobView:
        """Everything of the job ``body`` (a DIJob as ``reads`` answered it) a pass decides from."""
        try:
            job = self._validated.load(body)
        except InvalidJobError as err:
            return JobView(body, None, invalid="; ".join(str(p) for p in err.problems), cached=reads.cached)
        queue = None
        if self._queueing is not None and not job.suspend:  # spec.suspend wins: a suspended job is not queued
            queue = self._queueing.state(job, live=not reads.cached, extra=extra)
        namespace, name = job.namespace, job.name
        configmap = reads.configmap(namespace, membership_configmap_name(name))
        workflow = reads.workflow(namespace, workflow_name(name))
        service = reads.service(namespace, service_name(name))
        foreign = workflow is not None and not owned_by(workflow, job.uid)
        clashes = _conflicts(job, configmap, service, workflow if foreign else None)
        if _clashes(clashes, "ConfigMap"):
            configmap = None  # another owner's: its data is never read as the job's membership
        view = JobView(body, job, None, membership_of(configmap), workflow, queue=queue, cached=reads.cached)
        if reads.cached:
            self._check_current(view, configmap)
        copies = _copies(job, reads.workflows(namespace, name))
        view = dataclasses.replace(
            view.with_conflicts(*clashes),
            foreign=foreign,
            configmap=configmap,
            service=None if _clashes(clashes, "Service") else service,
            copies=copies,
        )
        view = self.with_pods(view, reads)
        if leftover_counted(view):
            runs = [p for p in self.live.pods(namespace, name) if _of_a_run(p, workflow_name(name))]
            view = dataclasses.replace(view, leftover_pods=len(runs))
        return view

    def finished_view(self, body: DIJobObject, reads: Reads) -> JobView:
        """A finished job: its Workflow (if it is the job's own) and that Workflow's pods, for cleanPodPolicy
        (from the watch cache: a pod it has not delivered yet is deleted by the pass its event starts)."""
        try:
            job = self._validated.load(body)
        except InvalidJobError:
            return JobView(body, None, cached=reads.cached)
        workflow = reads.workflow(job.namespace, workflow_name(job.name))
        foreign = workflow is not None and not owned_by(workflow, job.uid)
        return self.with_pods(JobView(body, job, workflow=workflow, foreign=foreign, cached=reads.cached), reads)

    def with_pods(self, view: JobView, reads: Reads) -> JobView:
        """``view`` with the pods of its own Workflow as ``reads`` answer now."""
        ours = view.ours
        if ours is None:
            return dataclasses.replace(view, pods=())
        uid = metadata(ours).get("uid")
        return dataclasses.replace(
            view, pods=tuple(p for p in reads.pods(view.namespace, view.name) if owned_by(p, uid))
        )

    def after_scale(self, view: JobView, reads: Reads) -> JobView:
        """What the scaler made, asked of the API server (the watch cache may not have it yet): the
        membership, the Workflow and the DIJob (which the scaler stamps: the status write's base)."""
        namespace, name = view.namespace, view.name
        configmap = self.live.configmap(namespace, membership_configmap_name(name))
        body = self.live.dijob(namespace, name) or view.body
        workflow = self.live.workflow(namespace, workflow_name(name))
        changed = dataclasses.replace(
            view, body=body, membership=membership_of(configmap), configmap=configmap, workflow=workflow, scaled=True
        )
        return self.with_pods(changed, reads)

    def _check_current(self, view: JobView, configmap: ConfigMap | None) -> None:
        """Raise :class:`CacheBehind` when the cache is behind what the status records.

        The status names a Workflow (or a membership generation) the cache does not hold yet: just
        created, or committed by a scaler, and its watch event still on the way. A missing object is
        asked of the API server, so one deleted for real is seen as gone (and the job fails); one the
        DIJob does not own (unlabelled: never in the cache) is not waited for.
        """
        if not view.started:
            return  # nothing created yet: creation reads back what already exists
        namespace, name = view.namespace, view.name
        uid = view.job.uid if view.job is not None else None
        if view.workflow is None and owned_by(self.live.workflow(namespace, workflow_name(name)) or {}, uid):
            raise CacheBehind(f"the Workflow {workflow_name(name)} is not in the watch cache yet")
        cm_name = membership_configmap_name(name)
        if configmap is None and owns(self.live.configmap(namespace, cm_name) or {}, uid):
            raise CacheBehind(f"the ConfigMap {cm_name} is not in the watch cache yet")
        recorded = view.status.get("membershipGeneration")
        if view.membership is not None and recorded is not None and view.membership.generation < int(recorded):
            raise CacheBehind(
                f"the ConfigMap {cm_name} in the watch cache is at generation {view.membership.generation}"
            )
