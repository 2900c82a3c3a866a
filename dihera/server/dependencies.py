"""What every job route depends on: the caller's identity and right (TokenReview, SubjectAccessReview),
the job's reference from the path, the cached job, and scaling with an optional Idempotency-Key.

The app's settings, backend, access checks and metrics are one :class:`ServerContext` on ``app.state``
(no globals). What only reads memory is ``async`` (no threadpool hop); what may call the API server
runs in the threadpool: the reviews on a cache miss (:class:`~dihera.server.access.Access`) and scaling.
"""

import hashlib
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Header, Path, Request, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from dihera.constants import HEADER_IDEMPOTENCY_KEY, LABEL_TRIAL_POD, PROFILINGS_SUBRESOURCE
from dihera.kube.auth import Identity
from dihera.kube.snapshot import JobSnapshot
from dihera.scaling import ScaleError, ScaleRequest
from dihera.schema import GROUP
from dihera.server import views
from dihera.server.access import Access
from dihera.server.answers import AnswerCache
from dihera.server.backend import Backend
from dihera.server.errors import ApiError
from dihera.server.idempotency import KeyReused
from dihera.server.metrics import ServerMetrics
from dihera.server.models import ScaleOut
from dihera.server.settings import ServerSettings
from dihera.server.training import TrainingReports

__all__ = [
    "EXPERIMENT_PATH",
    "JSON",
    "NAMESPACE_PATTERN",
    "NAME_PATTERN",
    "TRIAL_PATH",
    "V1_PATH",
    "V2_PATH",
    "Context",
    "ExperimentViewer",
    "IdempotencyKey",
    "JobCall",
    "JobRef",
    "Reader",
    "Reporter",
    "ServerContext",
    "TrialViewer",
    "Viewer",
    "Writer",
    "answer",
    "cached",
    "default_task",
    "job_sources",
    "replica_sources",
    "scale",
]

JSON = "application/json"
_STATUS = {"invalid": 400, "out-of-bounds": 400, "not-found": 404, "conflict": 409}
#: What a namespace and a DIJob's name may be in a path (also read by :mod:`dihera.server.fastpath`).
NAMESPACE_PATTERN, NAME_PATTERN = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?", r"[a-z0-9](?:[-a-z0-9.]*[a-z0-9])?"
_NS, _NAME = NAMESPACE_PATTERN, NAME_PATTERN
JobId = Annotated[
    str, Path(pattern=rf"^{_NS}\.{_NAME}$", max_length=317, description="<namespace>.<name>, split on the first dot")
]
Namespace = Annotated[str, Path(pattern=rf"^{_NS}$", max_length=63, description="the job's namespace")]
Name = Annotated[str, Path(pattern=rf"^{_NAME}$", max_length=253, description="the DIJob's name")]
PodName = Annotated[str, Path(pattern=rf"^{_NAME}$", max_length=253, description="a pod's name")]
IdempotencyKey = Annotated[str | None, Header(alias=HEADER_IDEMPOTENCY_KEY, max_length=200)]
bearer = HTTPBearer(auto_error=False, description="a Kubernetes bearer token (e.g. a service account token)")


@dataclass(frozen=True)
class ServerContext:
    settings: ServerSettings
    backend: Backend
    metrics: ServerMetrics
    access: Access
    answers: AnswerCache
    training: TrainingReports


async def _context(request: Request) -> ServerContext:
    ctx: ServerContext = request.app.state.dihera
    return ctx


Context = Annotated[ServerContext, Depends(_context)]


async def _v2_path(job_id: JobId) -> None:
    """Declares and validates the path of a ``/v2alpha1`` job route (the guard reads it, after the token)."""


async def _v1_path(namespace: Namespace, name: Name) -> None:
    """Declares and validates the path of a ``/v1`` job route (the guard reads it, after the token)."""


async def _trial_path(namespace: Namespace, pod: PodName) -> None:
    """Declares and validates the path of a trial's view (the guard reads it, after the token)."""


async def _experiment_path(namespace: Namespace, name: Name) -> None:
    """Declares and validates the path of a sweep's view or of a Workflow's link (a name like a DIJob's)."""


V2_PATH, V1_PATH, TRIAL_PATH = [Depends(_v2_path)], [Depends(_v1_path)], [Depends(_trial_path)]
EXPERIMENT_PATH = [Depends(_experiment_path)]


@dataclass(frozen=True)
class JobRef:
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


def _job_ref(request: Request) -> JobRef:
    params = request.path_params
    if "job_id" in params:
        namespace, dot, name = str(params["job_id"]).partition(".")  # a namespace has no dot; a name may
        if not dot or not namespace or not name:
            raise ApiError(400, f"job id {params['job_id']!r}: must be <namespace>.<name>")
        return JobRef(namespace, name)
    return JobRef(str(params["namespace"]), str(params["name"]))


@dataclass(frozen=True)
class JobCall:
    """A request on one job that passed the guard: which job, the app's context, and who (None: auth off, or an
    anonymous view)."""

    ref: JobRef
    ctx: ServerContext
    identity: Identity | None = None


def _namespace_ref(request: Request, _: ServerContext) -> JobRef:
    """Every DIJob of the path's namespace (a sweep's view lists its trials: ``list`` on DIJobs there)."""
    return JobRef(str(request.path_params["namespace"]), "")


def _trial_ref(request: Request, ctx: ServerContext) -> JobRef:
    """The DIJob a sweep's trial pod created (``/ui/namespaces/{namespace}/trials/{pod}``), from the cache."""
    namespace, pod = str(request.path_params["namespace"]), str(request.path_params["pod"])
    if not ctx.settings.watches(namespace):
        raise ApiError(404, f"pod {namespace}/{pod}: this di-server serves {ctx.settings.scope()} only")
    name = ctx.backend.trial_job(namespace, pod)
    if name is None:
        raise ApiError(
            404,
            f"pod {namespace}/{pod} created no DIJob (a sweep's trial pod labels the DIJob it creates "
            f"{LABEL_TRIAL_POD}={pod}; not this pod, or that DIJob was deleted)",
        )
    return JobRef(namespace, name)


RefOf = Callable[[Request, ServerContext], JobRef]
#: The chart's ClusterRole (``<fullname>-<role>``) that grants the right on each subresource a guard asks about.
_ROLE_OF = {PROFILINGS_SUBRESOURCE: "reporter"}


def _path_ref(request: Request, _: ServerContext) -> JobRef:
    return _job_ref(request)


def _guard(
    verb: str, view: bool = False, ref_of: RefOf = _path_ref, subresource: str = ""
) -> Callable[..., Awaitable[JobCall]]:
    """``view``: a read-only view (``/ui``), served without a token when ``anonymous_views`` is on.
    ``ref_of``: which job the request is about (after the token is checked, so an unknown caller learns nothing).
    ``subresource``: the right asked is ``verb`` on ``dijobs/<subresource>``, not on the DIJob itself."""
    resource = f"dijobs.{GROUP}" + (f"/{subresource}" if subresource else "")
    hint = f" (a role granting it: the chart's ClusterRole <fullname>-{_ROLE_OF[subresource]})" if subresource else ""

    async def check(
        request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]
    ) -> JobCall:
        ctx: ServerContext = request.app.state.dihera  # not a sub-dependency: one fewer to solve per request
        anonymous = credentials is None or not credentials.credentials
        if not ctx.settings.auth or (view and anonymous and ctx.settings.anonymous_views):
            return JobCall(ref_of(request, ctx), ctx)
        if credentials is None or not credentials.credentials:
            raise ApiError(401, "missing bearer token (header 'Authorization: Bearer <token>')")
        identity = await ctx.access.identity(credentials.credentials)
        if identity is None:
            raise ApiError(401, "the bearer token was not accepted by the Kubernetes API server")
        ref = ref_of(request, ctx)
        if not await ctx.access.allowed(identity, verb, ref.namespace, ref.name, subresource):
            raise ApiError(403, f"{identity.username} may not {verb} {resource} in namespace {ref.namespace}{hint}")
        return JobCall(ref, ctx, identity)

    return check


#: A job route's caller may ``get`` (Reader) or ``patch`` (Writer) DIJobs in the job's namespace; a
#: read-only view's (Viewer) too, unless the server serves views to anyone (``anonymous_views``).
Reader = Annotated[JobCall, Depends(_guard("get"))]
Writer = Annotated[JobCall, Depends(_guard("patch"))]
#: A report into ``status.profilings``: its caller (a job's pod) may ``create`` ``dijobs/profilings`` in the
#: namespace, a right of its own (the chart's ClusterRole ``<fullname>-reporter``), so a pod that may report
#: may not scale, suspend or edit a DIJob. ``patch`` on DIJobs alone is not enough (docs/scaling.md).
Reporter = Annotated[JobCall, Depends(_guard("create", subresource=PROFILINGS_SUBRESOURCE))]
Viewer = Annotated[JobCall, Depends(_guard("get", view=True))]
#: A view of the DIJob a sweep's trial pod created: the same rights as :data:`Viewer` on that DIJob.
TrialViewer = Annotated[JobCall, Depends(_guard("get", view=True, ref_of=_trial_ref))]
#: A sweep's view lists its trials' DIJobs: its caller may ``list`` DIJobs in the namespace (or views are open).
ExperimentViewer = Annotated[JobCall, Depends(_guard("list", view=True, ref_of=_namespace_ref))]


def cached(call: JobCall) -> JobSnapshot:
    """The job from the backend's cache; 404 when it is not there or not in a served namespace."""
    ctx, ref = call.ctx, call.ref
    if not ctx.settings.watches(ref.namespace):
        raise ApiError(404, f"DIJob {ref} not found: this di-server serves {ctx.settings.scope()} only")
    job = ctx.backend.job(ref.namespace, ref.name)
    if job is None:
        raise ApiError(404, f"DIJob {ref} not found")
    return job


def job_sources(job: JobSnapshot) -> tuple[object, ...]:
    """What a job's summary and its addresses are computed from."""
    return (job.body, job.configmap)


def replica_sources(job: JobSnapshot) -> tuple[object, ...]:
    """What a job's replica rows (with their pods' phases) are computed from."""
    return (job.body, job.configmap, *job.pods)


def answer(call: JobCall, route: str, sources: Sequence[object], compute: Callable[[], bytes]) -> Response:
    """A read's JSON, computed once per version of its ``sources`` (the cached objects it reads)."""
    key = (route, call.ref.namespace, call.ref.name)
    return Response(call.ctx.answers.get(key, sources, compute), media_type=JSON)


def scale(job: JobCall, request: ScaleRequest, key: str | None) -> ScaleOut:
    """Apply ``request`` (once per Idempotency-Key, across every di-server replica)."""
    ctx, ref = job.ctx, job.ref

    def call() -> tuple[int, Any]:
        try:
            result = ctx.backend.scale(ref.namespace, ref.name, request)
        except ScaleError as err:
            ctx.metrics.scales.labels(request.action.value, "refused").inc()
            return _STATUS.get(err.reason, 400), str(err)
        ctx.metrics.scales.labels(request.action.value, "scaled" if result.changed else "unchanged").inc()
        return 200, views.scale_out(result, ctx.settings.cluster_domain).model_dump(mode="json")

    if key:
        asked = json.dumps([request.action.value, request.task, request.count, request.names])
        fingerprint = hashlib.sha256(asked.encode()).hexdigest()  # bounded, whatever the list of names
        try:
            status, body = ctx.backend.keys.run(str(ref), key, fingerprint, call)
        except KeyReused as err:
            raise ApiError(409, str(err)) from err
    else:
        status, body = call()
    if status != 200:
        raise ApiError(status, body)
    return ScaleOut.model_validate(body)


def default_task(job: JobSnapshot, task: str | None) -> str:
    """``task``, else the job's collector task (DI-orchestrator's routes scale collectors)."""
    if task:
        return task
    tasks = (job.body.get("spec") or {}).get("tasks") or []
    for t in tasks:
        if t.get("type") == "collector":
            return str(t.get("name") or "collector")
    names = ", ".join(str(t.get("name") or t.get("type")) for t in tasks)
    raise ApiError(400, f"job has no collector task; pass ?task=NAME (tasks: {names})")
