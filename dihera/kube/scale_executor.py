"""Apply a scale request to a running job (the only I/O of scaling; decisions are in dihera.scaling).

Order: commit the new membership to the ConfigMap (new generation) → converge the Workflow's DAG
to it → delete the pods of retired replicas once Argo has finished their tombstones (a bounded watch of
the Workflow; :mod:`dihera.scaling.retired_pods`) → write ``spec.tasks[].replicas`` and the DIJob's stamp
``diengine/membership-generation`` in one patch (server requests), or the stamp alone (a synced
hand edit). The stamp tells the controller whether a spec is newer than the membership (a hand
edit to apply) or older (written before a newer commit: never applied); see docs/scaling.md.

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
from contextlib import closing, contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from dihera.constants import FIELD_MANAGER_SERVER, LABEL_JOB
from dihera.errors import InvalidJobError, InvalidScale, NotStarted, ScaleConflict, ScaleNotFound
from dihera.kube.errors import describe_api_error
from dihera.kube.jobs import JobStore
from dihera.kube.objects import WORKFLOW_GROUP, WORKFLOW_PLURAL, WORKFLOW_VERSION, ObjectStore
from dihera.kube.workloads import QuotaGate
from dihera.membership import Membership, Replica
from dihera.naming import membership_configmap_name, workflow_name
from dihera.patches import precondition
from dihera.render.env import MEMBERSHIP_FILE
from dihera.render.objects import membership_configmap
from dihera.render.settings import RenderSettings
from dihera.scaling import (
    Action,
    ScaleRequest,
    job_spec_patch,
    plan_scale,
    retired_dag_tasks,
    retired_pods,
    spec_is_current,
    stamp_patch,
    workflow_patch,
)
from dihera.schema import GROUP, PLURAL, VERSION
from dihera.validation import load_job

__all__ = ["JobScaler", "ScaleResult", "scale_job"]

log = logging.getLogger(__name__)
JSON_PATCH = "application/json-patch+json"
T = TypeVar("T")


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


#: The first pause after a lost resourceVersion race (seconds, jittered from 0), doubling per attempt up to
#: the cap: ten attempts span up to about 3 s.
CONFLICT_PAUSE = 0.01
CONFLICT_PAUSE_CAP = 0.5
#: How long a scale-down waits for Argo to finish the retired replicas' tombstones before deleting their pods
#: (seconds; Argo acts within a pass or two, ~1 s, idle, and took several seconds on a loaded machine). A pod
#: still waiting then is deleted by the controller once Argo has finished its tombstone.
RETIRE_WAIT = 60.0
#: A wait for Argo at least this long is logged (seconds).
RETIRE_WAIT_LOGGED = 1.0


class _Conflict(Exception):
    """A write lost a resourceVersion race: read again and recompute."""


class JobScaler:
    """Scales jobs through one API client; holds the per-job locks of this process (only while in use)."""

    def __init__(
        self,
        api: client.ApiClient,
        settings: RenderSettings | None = None,
        attempts: int = 10,
        field_manager: str = FIELD_MANAGER_SERVER,
        retire_wait: float = RETIRE_WAIT,
        quota: QuotaGate | None = None,
    ) -> None:
        """``retire_wait``: seconds a scale-down waits for Argo before deleting retired replicas' pods;
        ``quota``: Kueue must admit a queued job's added replicas first (None: jobs are not queued)."""
        self._quota = quota
        self._manager = field_manager
        self._retire_wait = retire_wait
        self._api = api
        self._settings = settings or RenderSettings()
        self._attempts = attempts
        self._jobs = JobStore(api)
        self._objects = ObjectStore(api)
        self._core = client.CoreV1Api(api)
        self._custom = client.CustomObjectsApi(api)
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
            previous, membership, job_counts, current = self._retry(lambda: self._commit(namespace, name, request))
            deleted = self._retry(lambda: self._converge_workflow(namespace, name))
            if update_spec or not current:
                self._retry(lambda: self._write_spec(namespace, name))
            elif request.action is Action.SYNC:  # the spec is the edit just applied: stamp what it stands for
                self._retry(lambda: self._write_stamp(namespace, name, membership.generation))
            # any other request with update_spec=False leaves the DIJob alone: stamping a spec whose
            # counts were not written would make it look like a hand edit of the new generation
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
        return ScaleResult(namespace, name, membership, job_counts, added, removed, tuple(deleted), changed)

    def _release_quota(self, namespace: str, name: str, membership: Membership) -> None:
        """A queued job scaled down: give Kueue back the quota of the replicas removed (best effort: a failure
        is logged, the scale stands; the quota is released when the job ends)."""
        assert self._quota is not None
        body = self._jobs.get(namespace, name)
        try:
            if body is not None:
                self._quota.release(load_job(body), membership.task_counts())
        except (ApiException, InvalidJobError) as err:
            log.warning("scale-down of %s/%s: releasing its Kueue quota failed: %s", namespace, name, err)

    def _retry(self, step: Callable[[], T]) -> T:
        """``step`` again after each lost resourceVersion race, after a jittered, growing pause.

        A DIJob's resourceVersion also moves with every status write (the controller's, the di-server's
        profilings): against a writer in a tight loop, retries back to back keep losing the same race.
        """
        for attempt in range(self._attempts):
            try:
                return step()
            except _Conflict:
                if attempt + 1 < self._attempts:
                    time.sleep(random.uniform(0, min(CONFLICT_PAUSE_CAP, CONFLICT_PAUSE * 2**attempt)))
        raise ScaleConflict(f"gave up after {self._attempts} resourceVersion conflicts; try again")

    # -- reads ------------------------------------------------------------------------------------

    def _read(self, namespace: str, name: str) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        body = self._jobs.get(namespace, name)
        if body is None:
            raise ScaleNotFound(f"DIJob {namespace}/{name} not found")
        configmap = self._objects.get_configmap(namespace, membership_configmap_name(name))
        workflow = self._objects.get_workflow(namespace, workflow_name(name))
        if configmap is None or workflow is None or MEMBERSHIP_FILE not in (configmap.get("data") or {}):
            raise NotStarted(f"DIJob {namespace}/{name} has not started yet (no Workflow or membership)")
        return body, configmap, workflow

    # -- steps ------------------------------------------------------------------------------------

    def _commit(
        self, namespace: str, name: str, request: ScaleRequest
    ) -> tuple[Membership, Membership, dict[str, int], bool]:
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
            return current, current, current.task_counts(), False
        plan = plan_scale(job, current, workflow, request)
        if plan.changed and self._quota is not None:  # a refusal (QuotaRefused) changes nothing
            self._quota.admit(job, current.task_counts(), plan.membership.task_counts(), plan.membership.generation)
        if plan.changed:
            data = membership_configmap(plan.job, plan.membership, self._settings)["data"]
            meta = configmap["metadata"]
            new = {**configmap, "data": data, "metadata": {**meta, "resourceVersion": meta["resourceVersion"]}}
            self._write(
                lambda: self._core.replace_namespaced_config_map(
                    meta["name"],
                    namespace,
                    new,  # type: ignore[arg-type]
                    field_manager=self._manager,
                )
            )
        return current, plan.membership, plan.replicas, True

    def _converge_workflow(self, namespace: str, name: str) -> list[str]:
        _, configmap, workflow = self._read(namespace, name)
        membership = Membership.from_json(configmap["data"][MEMBERSHIP_FILE])
        ops = workflow_patch(membership, workflow)
        if ops:
            ops = [precondition(workflow), *ops]
            workflow = self._write(
                lambda: self._custom.patch_namespaced_custom_object(
                    WORKFLOW_GROUP,
                    WORKFLOW_VERSION,
                    namespace,
                    WORKFLOW_PLURAL,
                    workflow_name(name),
                    ops,
                    field_manager=self._manager,
                    _content_type=JSON_PATCH,
                )
            )
        return self._delete_retired_pods(namespace, name, workflow)

    def _delete_retired_pods(self, namespace: str, name: str, workflow: dict[str, Any]) -> list[str]:
        """Delete the live pods of retired replicas, each once Argo has finished its tombstone.

        Argo may act on the Workflow patch seconds after it was written (its informer lags under load);
        a pod deleted before would be started again (:mod:`dihera.scaling.retired_pods`). The Workflow is
        watched from the version read or written, for up to ``retire_wait`` seconds; a pod still waiting
        then is left to the controller, which deletes it once its watch shows the tombstone finished.
        """
        if not retired_dag_tasks(workflow):
            return []  # no replica retired yet: no pod to look for (a big job's pods are megabytes to list)
        pods = self._objects.list_pods(namespace, f"{LABEL_JOB}={name}")
        found = retired_pods(name, workflow, pods)
        deadline = time.monotonic() + self._retire_wait
        deleted: list[str] = []
        waited = 0.0  # seconds spent waiting for Argo's writes
        updates = self._objects.watch_workflow(
            namespace, workflow_name(name), workflow["metadata"]["resourceVersion"], self._retire_wait
        )
        with closing(updates):
            while True:
                if found.ready:  # only pods the Workflow owns, each under its uid (dihera.scaling.retired_pods)
                    self._objects.delete_pods(namespace, found.ready, found.uids)
                    deleted += found.ready
                if not found.waiting or time.monotonic() >= deadline:
                    break
                before = time.monotonic()
                newer = next(updates, None)
                waited += time.monotonic() - before
                if newer is None:
                    break
                waiting = set(found.waiting)
                found = retired_pods(name, newer, [p for p in pods if p["metadata"]["name"] in waiting])
        extra = {"job": f"{namespace}/{name}"}
        if found.waiting:
            log.warning(
                "Argo has not finished the retired replicas of pods %s after %.1fs; left to the controller",
                list(found.waiting),
                waited,
                extra=extra,
            )
        elif deleted and waited >= RETIRE_WAIT_LOGGED:
            log.info("deleted %d retired pod(s); waited %.1fs for Argo", len(deleted), waited, extra=extra)
        return sorted(deleted)

    def _write_spec(self, namespace: str, name: str) -> None:
        """Spec counts and stamp from the *latest* membership, in one patch.

        The DIJob is read last, right before the patch guarded by its resourceVersion: the shorter
        that window, the fewer status writes land in it.
        """
        configmap = self._objects.get_configmap(namespace, membership_configmap_name(name))
        body = self._jobs.get(namespace, name)
        if body is None or configmap is None or MEMBERSHIP_FILE not in (configmap.get("data") or {}):
            raise ScaleNotFound(f"DIJob {namespace}/{name} or its membership went away")
        membership = Membership.from_json(configmap["data"][MEMBERSHIP_FILE])
        ops = job_spec_patch(body, membership.task_counts(), membership.generation)
        if ops:
            ops = [precondition(body), *ops]
            self._write(
                lambda: self._custom.patch_namespaced_custom_object(
                    GROUP, VERSION, namespace, PLURAL, name, ops, field_manager=self._manager, _content_type=JSON_PATCH
                )
            )

    def _write_stamp(self, namespace: str, name: str, generation: int) -> None:
        """Stamp the DIJob with the generation a hand edit was committed as (metadata only).

        The DIJob's ``metadata.generation`` does not move. Not the latest generation: a request
        committed since has its own spec to write, and a newer stamp would pass the edit off as newer.
        """
        body = self._jobs.get(namespace, name)
        if body is None:
            raise ScaleNotFound(f"DIJob {namespace}/{name} not found")
        ops = stamp_patch(body, generation)
        if ops:
            ops = [precondition(body), *ops]
            self._write(
                lambda: self._custom.patch_namespaced_custom_object(
                    GROUP, VERSION, namespace, PLURAL, name, ops, field_manager=self._manager, _content_type=JSON_PATCH
                )
            )

    def _write(self, call: Callable[[], Any]) -> Any:
        try:
            result = call()
        except ApiException as err:
            if err.status == 409:
                raise _Conflict() from err
            if err.status == 404:
                raise ScaleNotFound(f"the job's objects went away: {describe_api_error(err)}") from err
            raise
        return result


def scale_job(
    api: client.ApiClient,
    namespace: str,
    name: str,
    request: ScaleRequest,
    *,
    settings: RenderSettings | None = None,
    update_spec: bool = True,
) -> ScaleResult:
    """One-shot :meth:`JobScaler.scale` (a long-lived caller keeps one JobScaler for its per-job locks)."""
    return JobScaler(api, settings).scale(namespace, name, request, update_spec=update_spec)
