"""Scaling's API calls: the stores of :mod:`dihera.scaling.ports` over one API client, and ``JobScaler``, the
use case (:class:`dihera.scaling.executor.ScaleExecutor`: order of writes, retries, the watch of retirement)
wired to them.

Nothing here decides: each method is one call (or a read of :mod:`dihera.kube.objects` /
:mod:`dihera.kube.jobs`), its errors told in the ports' terms: 409 → ``WriteConflict`` (the use case reads
again), 404 on a write → ``ScaleNotFound``, a failed release of Kueue quota → ``QuotaReleaseFailed``.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import cast

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from dihera.constants import FIELD_MANAGER_SERVER
from dihera.errors import ScaleNotFound
from dihera.kube.errors import describe_api_error
from dihera.kube.jobs import JobStore
from dihera.kube.objects import WORKFLOW_GROUP, WORKFLOW_PLURAL, WORKFLOW_VERSION, ObjectStore
from dihera.kube.workloads import QuotaGate
from dihera.model import DIJob
from dihera.patches import PatchOp
from dihera.render.settings import RenderSettings
from dihera.scaling import ScaleRequest
from dihera.scaling.executor import ScaleExecutor, ScaleResult
from dihera.scaling.ports import QuotaReleaseFailed, WriteConflict
from dihera.scaling.retire import RETIRE_WAIT
from dihera.schema import GROUP, PLURAL, VERSION
from dihera.shapes.configmap import ConfigMap, as_configmap
from dihera.shapes.dijob import DIJobObject, as_dijob
from dihera.shapes.pod import Pod, as_pod
from dihera.shapes.workflow import Workflow, as_workflow

__all__ = ["JobScaler", "ScaleResult", "ScaleStore", "scale_job"]

JSON_PATCH = "application/json-patch+json"


@contextmanager
def _write(what: str) -> Iterator[None]:
    """A write's ApiException in the ports' terms: 409 is a lost race, 404 an object gone."""
    try:
        yield
    except ApiException as err:
        if err.status == 409:
            raise WriteConflict(f"{what}: {describe_api_error(err)}") from err
        if err.status == 404:
            raise ScaleNotFound(f"the job's objects went away: {describe_api_error(err)}") from err
        raise


class ScaleStore:
    """A job's DIJob, membership ConfigMap, Workflow and pods for scaling (``dihera.scaling.ports``' stores),
    through one API client; writes under one field manager. No I/O until a method is called."""

    def __init__(self, api: client.ApiClient, field_manager: str = FIELD_MANAGER_SERVER) -> None:
        self._manager = field_manager
        self._jobs = JobStore(api)
        self._objects = ObjectStore(api)
        self._core = client.CoreV1Api(api)
        self._custom = client.CustomObjectsApi(api)

    def get_job(self, namespace: str, name: str) -> DIJobObject | None:
        found = self._jobs.get(namespace, name)
        return None if found is None else as_dijob(found)

    def patch_job(self, namespace: str, name: str, ops: Sequence[PatchOp]) -> None:
        with _write(f"DIJob {namespace}/{name}"):
            self._custom.patch_namespaced_custom_object(
                GROUP,
                VERSION,
                namespace,
                PLURAL,
                name,
                [dict(op) for op in ops],
                field_manager=self._manager,
                _content_type=JSON_PATCH,
            )

    def get_configmap(self, namespace: str, name: str) -> ConfigMap | None:
        found = self._objects.get_configmap(namespace, name)
        return None if found is None else as_configmap(found)

    def replace_configmap(self, namespace: str, configmap: ConfigMap) -> None:
        name = configmap["metadata"]["name"]
        with _write(f"ConfigMap {namespace}/{name}"):
            self._core.replace_namespaced_config_map(
                name,
                namespace,
                dict(configmap),  # type: ignore[arg-type]
                field_manager=self._manager,
            )

    def get_workflow(self, namespace: str, name: str) -> Workflow | None:
        found = self._objects.get_workflow(namespace, name)
        return None if found is None else as_workflow(found)

    def patch_workflow(self, namespace: str, name: str, ops: Sequence[PatchOp]) -> Workflow:
        with _write(f"Workflow {namespace}/{name}"):
            written = self._custom.patch_namespaced_custom_object(
                WORKFLOW_GROUP,
                WORKFLOW_VERSION,
                namespace,
                WORKFLOW_PLURAL,
                name,
                [dict(op) for op in ops],
                field_manager=self._manager,
                _content_type=JSON_PATCH,
            )
        return as_workflow(cast(dict[str, object], written))

    def watch_workflow(
        self, namespace: str, name: str, after: str, seconds: float
    ) -> Generator[dict[str, object], None, None]:
        return self._objects.watch_workflow(namespace, name, after, seconds)

    def list_pods(self, namespace: str, selector: str) -> list[Pod]:
        return [as_pod(pod) for pod in self._objects.list_pods(namespace, selector)]

    def delete_pods(self, namespace: str, names: Sequence[str], uids: Mapping[str, str] | None = None) -> None:
        self._objects.delete_pods(namespace, names, uids)


class _KueueQuota:
    """:class:`dihera.kube.workloads.QuotaGate` as the port :class:`dihera.scaling.ports.Quota`."""

    def __init__(self, gate: QuotaGate) -> None:
        self._gate = gate

    def admit(self, job: DIJob, before: Mapping[str, int], after: Mapping[str, int], generation: int) -> None:
        self._gate.admit(job, before, after, generation)

    def release(self, job: DIJob, needed: Mapping[str, int]) -> None:
        try:
            self._gate.release(job, needed)
        except ApiException as err:
            raise QuotaReleaseFailed(str(err)) from err


class JobScaler(ScaleExecutor):
    """The scaling use case on the cluster through one API client (one per process: it holds the per-job
    locks). ``retire_wait``: seconds a scale-down waits for Argo before deleting retired replicas' pods;
    ``quota``: Kueue must admit a queued job's added replicas first (None: jobs are not queued)."""

    def __init__(
        self,
        api: client.ApiClient,
        settings: RenderSettings | None = None,
        attempts: int = 10,
        field_manager: str = FIELD_MANAGER_SERVER,
        retire_wait: float = RETIRE_WAIT,
        quota: QuotaGate | None = None,
    ) -> None:
        store = ScaleStore(api, field_manager)
        super().__init__(
            jobs=store,
            memberships=store,
            workflows=store,
            retirement=store,
            settings=settings,
            quota=_KueueQuota(quota) if quota is not None else None,
            attempts=attempts,
            retire_wait=retire_wait,
        )


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
