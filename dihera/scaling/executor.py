"""Scaling a running job, the use case: the ordered steps and the retry policy (the cluster behind
:mod:`dihera.scaling.ports`; :mod:`dihera.kube.scale_executor` wires it to the API as ``JobScaler``).

Order: commit the new membership to the ConfigMap (new generation; a queued job's added replicas admitted by
Kueue first) → converge the Workflow's DAG to it → delete the pods of retired replicas once Argo has finished
their tombstones (a bounded watch of the Workflow; :mod:`dihera.scaling.retire`) → write
``spec.tasks[].replicas`` and the DIJob's stamp ``diengine/membership-generation`` in one patch (server
requests), or the stamp alone (a synced hand edit) → give a scale-down's quota back. The stamp tells the
controller whether a spec is newer than the membership (a hand edit to apply) or older (written before a
newer commit: never applied); see docs/scaling.md.

Concurrency: one lock per job in this process serialises requests; across processes every write
carries the resourceVersion it was computed from, and a 409 Conflict re-reads and recomputes. Only
the ConfigMap write applies the request; the later steps converge to the *latest* committed
membership, so a crash or a concurrent writer never makes a request apply twice or roll back.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar

from dihera.errors import InvalidJobError, InvalidScale, NotStarted, ScaleConflict, ScaleNotFound
from dihera.membership import Membership, Replica
from dihera.naming import membership_configmap_name, workflow_name
from dihera.patches import precondition
from dihera.render.env import MEMBERSHIP_FILE
from dihera.render.objects import membership_configmap
from dihera.render.settings import RenderSettings
from dihera.scaling.plan import plan_scale
from dihera.scaling.ports import (
    JobObjects,
    MembershipStore,
    Quota,
    QuotaReleaseFailed,
    RetirementStore,
    WorkflowStore,
    WriteConflict,
)
from dihera.scaling.request import Action, ScaleRequest
from dihera.scaling.retire import RETIRE_WAIT, delete_retired_pods
from dihera.scaling.spec_patch import job_spec_patch, spec_is_current, stamp_patch
from dihera.scaling.workflow_patch import workflow_patch
from dihera.shapes.configmap import ConfigMap
from dihera.shapes.dijob import DIJobObject
from dihera.shapes.workflow import Workflow
from dihera.validation import load_job

__all__ = ["CONFLICT_PAUSE", "CONFLICT_PAUSE_CAP", "ScaleExecutor", "ScaleResult"]

log = logging.getLogger(__name__)
T = TypeVar("T")

#: The first pause after a lost resourceVersion race (seconds, jittered from 0), doubling per attempt up to
#: the cap: ten attempts span up to about 3 s.
CONFLICT_PAUSE = 0.01
CONFLICT_PAUSE_CAP = 0.5


@dataclass(frozen=True)
class ScaleResult:
    """What a request did. ``changed`` is False when the job already had the asked replicas."""

    namespace: str
    name: str
    membership: Membership
    replicas: Mapping[str, int]
    added: tuple[Replica, ...]
    removed: tuple[Replica, ...]
    deleted_pods: tuple[str, ...]
    changed: bool


@dataclass(frozen=True)
class _Commit:
    """The commit step's outcome: the membership before and after, the counts, whether the spec is current."""

    previous: Membership
    membership: Membership
    replicas: dict[str, int]
    current: bool


class ScaleExecutor:
    """Scales jobs through the stores it is given; holds the per-job locks of this process (only while in use).

    ``settings``: how the ConfigMap is rendered; ``quota``: a queued job's added replicas must be admitted
    first (None: jobs are not queued); ``attempts``: tries of a step that keeps losing resourceVersion races;
    ``retire_wait``: seconds a scale-down waits for Argo before leaving retired replicas' pods to the
    controller; ``sleep`` and ``clock``: the pauses between tries and the watch's deadline.
    """

    def __init__(
        self,
        *,
        jobs: JobObjects,
        memberships: MembershipStore,
        workflows: WorkflowStore,
        retirement: RetirementStore,
        settings: RenderSettings | None = None,
        quota: Quota | None = None,
        attempts: int = 10,
        retire_wait: float = RETIRE_WAIT,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._jobs, self._memberships, self._workflows = jobs, memberships, workflows
        self._retirement = retirement
        self._settings = settings or RenderSettings()
        self._quota = quota
        self._attempts = attempts
        self._retire_wait = retire_wait
        self._sleep, self._clock = sleep, clock
        self._guard = threading.Lock()
        #: job → (its lock, how many requests hold or wait for it); an entry goes when its last user leaves
        self._locks: dict[str, tuple[threading.Lock, int]] = {}

    @property
    def locked_jobs(self) -> int:
        """Jobs with a request in progress or waiting here (the size of the lock table)."""
        with self._guard:
            return len(self._locks)

    @contextmanager
    def _locked(self, key: str) -> Iterator[None]:
        with self._guard:
            lock, users = self._locks.get(key, (threading.Lock(), 0))
            self._locks[key] = (lock, users + 1)
        try:
            with lock:
                yield
        finally:
            with self._guard:
                lock, users = self._locks[key]
                if users == 1:
                    del self._locks[key]
                else:
                    self._locks[key] = (lock, users - 1)

    def scale(self, namespace: str, name: str, request: ScaleRequest, *, update_spec: bool = True) -> ScaleResult:
        """Apply ``request`` to job ``namespace/name``. ScaleError when refused (nothing changed).

        ``update_spec``: write the new counts and the stamp into the DIJob. With False, a sync (the
        spec *is* the edit, made by hand and seen by the controller) writes only the stamp, and any
        other request writes nothing to the DIJob.

        ``ScaleRequest.sync()`` makes spec and membership agree, the newer one winning: a spec whose
        stamp is at least the membership's generation is applied (a hand edit); an older one is
        overwritten from the membership (it predates a commit that must not be undone).
        """
        with self._locked(f"{namespace}/{name}"):
            commit = self._retry(lambda: self._commit(namespace, name, request))
            deleted = self._retry(lambda: self._converge_workflow(namespace, name))
            if update_spec or not commit.current:
                self._retry(lambda: self._write_spec(namespace, name))
            elif request.action is Action.SYNC:  # the spec is the edit just applied: stamp what it stands for
                self._retry(lambda: self._write_stamp(namespace, name, commit.membership.generation))
            # any other request with update_spec=False leaves the DIJob alone: stamping a spec whose
            # counts were not written would make it look like a hand edit of the new generation
        previous, membership = commit.previous, commit.membership
        before, after = frozenset(previous.replicas), frozenset(membership.replicas)
        added = tuple(r for r in membership.replicas if r not in before)
        removed = tuple(r for r in previous.replicas if r not in after)
        if removed and self._quota is not None:
            self._release_quota(namespace, name, membership)
        changed = membership != previous
        if changed:
            log.info(
                "scaled %s/%s to generation %d: added %s, removed %s",
                namespace,
                name,
                membership.generation,
                [f"{r.task}-{r.index}" for r in added],
                [f"{r.task}-{r.index}" for r in removed],
                extra={"job": f"{namespace}/{name}"},
            )
        return ScaleResult(namespace, name, membership, commit.replicas, added, removed, tuple(deleted), changed)

    def _release_quota(self, namespace: str, name: str, membership: Membership) -> None:
        """A queued job scaled down: give Kueue back the quota of the replicas removed (best effort: a failure
        is logged, the scale stands; the quota is released when the job ends)."""
        assert self._quota is not None
        body = self._jobs.get_job(namespace, name)
        try:
            if body is not None:
                self._quota.release(load_job(body), membership.task_counts())
        except (QuotaReleaseFailed, InvalidJobError) as err:
            log.warning("scale-down of %s/%s: releasing its Kueue quota failed: %s", namespace, name, err)

    def _retry(self, step: Callable[[], T]) -> T:
        """``step`` again after each lost resourceVersion race, after a jittered, growing pause.

        A DIJob's resourceVersion also moves with every status write (the controller's, the di-server's
        profilings): against a writer in a tight loop, retries back to back keep losing the same race.
        """
        for attempt in range(self._attempts):
            try:
                return step()
            except WriteConflict:
                if attempt + 1 < self._attempts:
                    self._sleep(random.uniform(0, min(CONFLICT_PAUSE_CAP, CONFLICT_PAUSE * 2**attempt)))
        raise ScaleConflict(f"gave up after {self._attempts} resourceVersion conflicts; try again")

    # -- reads ------------------------------------------------------------------------------------

    def _read(self, namespace: str, name: str) -> tuple[DIJobObject, ConfigMap, Workflow]:
        body = self._jobs.get_job(namespace, name)
        if body is None:
            raise ScaleNotFound(f"DIJob {namespace}/{name} not found")
        configmap = self._memberships.get_configmap(namespace, membership_configmap_name(name))
        workflow = self._workflows.get_workflow(namespace, workflow_name(name))
        if configmap is None or workflow is None or MEMBERSHIP_FILE not in (configmap.get("data") or {}):
            raise NotStarted(f"DIJob {namespace}/{name} has not started yet (no Workflow or membership)")
        return body, configmap, workflow

    # -- steps ------------------------------------------------------------------------------------

    def _commit(self, namespace: str, name: str, request: ScaleRequest) -> _Commit:
        """Commit ``request``: previous and new membership, the counts, whether the spec is current.

        A sync of a spec older than the membership commits nothing (decided on the reads the
        commit would be made with, so no commit can slip in between the decision and the write).
        """
        body, configmap, workflow = self._read(namespace, name)
        try:
            job = load_job(body)
        except InvalidJobError as err:
            raise InvalidScale(f"DIJob {namespace}/{name} is invalid: {err}", "conflict") from err
        current = Membership.from_json(configmap["data"][MEMBERSHIP_FILE])
        if request.action is Action.SYNC and not spec_is_current(body, current):
            return _Commit(current, current, current.task_counts(), False)
        plan = plan_scale(job, current, workflow, request)
        if plan.changed and self._quota is not None:  # a refusal (QuotaRefused) changes nothing
            self._quota.admit(job, current.task_counts(), plan.membership.task_counts(), plan.membership.generation)
        if plan.changed:
            data = membership_configmap(plan.job, plan.membership, self._settings)["data"]
            meta = configmap["metadata"]
            new: ConfigMap = {
                **configmap,
                "data": data,
                "metadata": {**meta, "resourceVersion": meta["resourceVersion"]},
            }
            self._memberships.replace_configmap(namespace, new)
        return _Commit(current, plan.membership, plan.replicas, True)

    def _converge_workflow(self, namespace: str, name: str) -> list[str]:
        """Converge the Workflow to the latest membership, then delete the retired replicas' pods
        (:mod:`dihera.scaling.retire`, watching the Workflow from the version read or written)."""
        _, configmap, workflow = self._read(namespace, name)
        membership = Membership.from_json(configmap["data"][MEMBERSHIP_FILE])
        ops = workflow_patch(membership, workflow)
        if ops:
            workflow = self._workflows.patch_workflow(namespace, workflow_name(name), [precondition(workflow), *ops])
        return delete_retired_pods(
            self._retirement, namespace, name, workflow, wait=self._retire_wait, clock=self._clock
        )

    def _write_spec(self, namespace: str, name: str) -> None:
        """Spec counts and stamp from the *latest* membership, in one patch.

        The DIJob is read last, right before the patch guarded by its resourceVersion: the shorter
        that window, the fewer status writes land in it.
        """
        configmap = self._memberships.get_configmap(namespace, membership_configmap_name(name))
        body = self._jobs.get_job(namespace, name)
        if body is None or configmap is None or MEMBERSHIP_FILE not in (configmap.get("data") or {}):
            raise ScaleNotFound(f"DIJob {namespace}/{name} or its membership went away")
        membership = Membership.from_json(configmap["data"][MEMBERSHIP_FILE])
        ops = job_spec_patch(body, membership.task_counts(), membership.generation)
        if ops:
            self._jobs.patch_job(namespace, name, [precondition(body), *ops])

    def _write_stamp(self, namespace: str, name: str, generation: int) -> None:
        """Stamp the DIJob with the generation a hand edit was committed as (metadata only).

        The DIJob's ``metadata.generation`` does not move. Not the latest generation: a request
        committed since has its own spec to write, and a newer stamp would pass the edit off as newer.
        """
        body = self._jobs.get_job(namespace, name)
        if body is None:
            raise ScaleNotFound(f"DIJob {namespace}/{name} not found")
        ops = stamp_patch(body, generation)
        if ops:
            self._jobs.patch_job(namespace, name, [precondition(body), *ops])
