"""The di-server's HTTP API (FastAPI): DI-orchestrator's ``/v2alpha1`` routes and the clean ``/v1`` API.

Every job route authenticates the caller's bearer token (TokenReview, 401), then asks whether that
identity may ``get`` (reads) or ``patch`` (writes) DIJobs in the job's namespace, taken from the
path only (SubjectAccessReview, 403). Reads come from the backend's watch-backed cache.

(No ``from __future__ import annotations`` here: FastAPI must resolve the route signatures'
dependency aliases, which are local to :func:`create_app`.)
"""

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Body, Depends, FastAPI, Header, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match, Route

from dihera.kube.cache import CachedJob
from dihera.scaling import ScaleError, ScaleRequest
from dihera.server import views
from dihera.server.backend import Backend
from dihera.server.idempotency import KeyReused
from dihera.server.metrics import ServerMetrics
from dihera.server.models import (
    Envelope,
    ErrorBody,
    JobSummary,
    RemoveReplicasBody,
    ReplicaOut,
    ReplicasBody,
    ScaleOut,
)
from dihera.server.settings import ServerSettings

__all__ = ["ApiError", "create_app"]

log = logging.getLogger(__name__)
V2 = "/v2alpha1"
_STATUS = {"invalid": 400, "out-of-bounds": 400, "not-found": 404, "conflict": 409}
_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorBody, "description": text}
    for code, text in {
        400: "malformed request, or outside the job's minReplicas/maxReplicas",
        401: "no bearer token, or the API server does not accept it",
        403: "the caller may not do this on DIJobs in the namespace",
        404: "no such job, task or replica",
        409: "the job cannot be scaled now, or the Idempotency-Key was used for another request",
    }.items()
}
_V2_ERRORS: dict[int | str, dict[str, Any]] = {k: {**v, "model": Envelope} for k, v in _ERRORS.items()}
IdempotencyKey = Annotated[str | None, Header(alias="Idempotency-Key", max_length=200)]
_NS, _NAME = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?"
JobId = Annotated[
    str, Path(pattern=rf"^{_NS}\.{_NAME}$", max_length=317, description="<namespace>.<name>, split on the first dot")
]
Namespace = Annotated[str, Path(pattern=rf"^{_NS}$", max_length=63, description="the job's namespace")]
Name = Annotated[str, Path(pattern=rf"^{_NAME}$", max_length=253, description="the DIJob's name")]


def _v2_path(job_id: JobId) -> None:
    """Declares and validates the path of a ``/v2alpha1`` job route (the guard reads it, after the token)."""


def _v1_path(namespace: Namespace, name: Name) -> None:
    """Declares and validates the path of a ``/v1`` job route (the guard reads it, after the token)."""


V2_PATH, V1_PATH = [Depends(_v2_path)], [Depends(_v1_path)]


class ApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class JobRef:
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


def _error_response(
    request: Request, status: int, message: str, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    if request.url.path.startswith(V2):
        body: dict[str, Any] = {"success": False, "code": 1, "message": message, "data": None}
    else:
        body = {"detail": message}
    return JSONResponse(body, status_code=status, headers=headers)


def _validation_message(err: RequestValidationError) -> str:
    parts = []
    for e in err.errors():
        where = ".".join(str(p) for p in e.get("loc", ()))
        value = e.get("input")
        shown = "" if e.get("type") == "missing" else f" (got {json.dumps(value, default=str)[:80]})"
        parts.append(f"{where}: {e.get('msg')}{shown}")
    return "; ".join(parts) or "malformed request"


def _allowed_methods(app: FastAPI, request: Request) -> str:
    """Every method some route of the app serves at the request's path (``Allow`` of a 405)."""
    methods: set[str] = set()
    for route in app.router.routes:
        if isinstance(route, Route) and route.methods and route.matches(request.scope)[0] != Match.NONE:
            methods |= route.methods
    return ", ".join(sorted(methods))


def _job_ref(request: Request) -> JobRef:
    params = request.path_params
    if "job_id" in params:
        namespace, dot, name = str(params["job_id"]).partition(".")  # a namespace has no dot; a name may
        if not dot or not namespace or not name:
            raise ApiError(400, f"job id {params['job_id']!r}: must be <namespace>.<name>")
        return JobRef(namespace, name)
    return JobRef(str(params["namespace"]), str(params["name"]))


def create_app(settings: ServerSettings, backend: Backend) -> FastAPI:
    """The di-server app over ``backend``; nothing is read or started here."""
    app = FastAPI(
        title="dihera di-server",
        version="1",
        summary="Read and scale running DI-engine jobs (DIJobs on Argo Workflows).",
        description=(
            "Callers present a Kubernetes bearer token. Reads need `get` on `dijobs`, writes `patch`, in the "
            "job's namespace. `/v2alpha1` keeps DI-orchestrator's routes and envelope; `/v1` is the clean API."
        ),
    )
    metrics = ServerMetrics()
    app.middleware("http")(metrics.middleware)
    bearer = HTTPBearer(auto_error=False, description="a Kubernetes bearer token (e.g. a service account token)")

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        return _error_response(request, exc.status, exc.message)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return _error_response(request, 400, _validation_message(exc))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        headers = dict(exc.headers or {})
        if exc.status_code == 405:  # Starlette names only the first route's methods; a path has several routes
            headers["Allow"] = _allowed_methods(app, request)
        return _error_response(request, exc.status_code, str(exc.detail), headers)

    @app.exception_handler(Exception)
    async def _crash(request: Request, exc: Exception) -> JSONResponse:
        log.exception("%s %s failed", request.method, request.url.path)
        return _error_response(request, 500, f"internal error: {type(exc).__name__}: {exc}")

    def guard(verb: str) -> Callable[..., JobRef]:
        def check(
            request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]
        ) -> JobRef:
            if not settings.auth:
                return _job_ref(request)
            if credentials is None or not credentials.credentials:
                raise ApiError(401, "missing bearer token (header 'Authorization: Bearer <token>')")
            identity = backend.authenticate(credentials.credentials)
            if identity is None:
                raise ApiError(401, "the bearer token was not accepted by the Kubernetes API server")
            ref = _job_ref(request)
            if not backend.allowed(identity, verb, ref.namespace, ref.name):
                raise ApiError(
                    403,
                    f"{identity.username} may not {verb} dijobs.diengine.opendilab.org in namespace {ref.namespace}",
                )
            return ref

        return check

    Reader = Annotated[JobRef, Depends(guard("get"))]
    Writer = Annotated[JobRef, Depends(guard("patch"))]

    def cached(ref: JobRef) -> CachedJob:
        if not settings.watches(ref.namespace):
            raise ApiError(404, f"DIJob {ref} not found: this di-server serves {settings.scope()} only")
        job = backend.job(ref.namespace, ref.name)
        if job is None:
            raise ApiError(404, f"DIJob {ref} not found")
        return job

    def scale(ref: JobRef, request: ScaleRequest, key: str | None) -> ScaleOut:
        def call() -> tuple[int, Any]:
            try:
                result = backend.scale(ref.namespace, ref.name, request)
            except ScaleError as err:
                metrics.scales.labels(request.action.value, "refused").inc()
                return _STATUS.get(err.reason, 400), str(err)
            metrics.scales.labels(request.action.value, "scaled" if result.changed else "unchanged").inc()
            return 200, views.scale_out(result, settings.cluster_domain).model_dump(mode="json")

        if key:
            fingerprint = json.dumps([request.action.value, request.task, request.count, request.names])
            try:
                status, body = backend.keys.run(str(ref), key, fingerprint, call)
            except KeyReused as err:
                raise ApiError(409, str(err)) from err
        else:
            status, body = call()
        if status != 200:
            raise ApiError(status, body)
        return ScaleOut.model_validate(body)

    def default_task(job: CachedJob, task: str | None) -> str:
        if task:
            return task
        tasks = (job.body.get("spec") or {}).get("tasks") or []
        for t in tasks:
            if t.get("type") == "collector":
                return str(t.get("name") or "collector")
        names = ", ".join(str(t.get("name") or t.get("type")) for t in tasks)
        raise ApiError(400, f"job has no collector task; pass ?task=NAME (tasks: {names})")

    # -- operations --------------------------------------------------------------------------------

    @app.get("/healthz", tags=["operations"])
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz", tags=["operations"], responses={503: {"model": ErrorBody}})
    def readyz() -> JSONResponse:
        if backend.ready():
            return JSONResponse({"status": "ready"})
        return JSONResponse({"detail": "caches not synced yet"}, status_code=503)

    @app.get("/metrics", tags=["operations"], response_class=Response)
    def prometheus() -> Response:
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    # -- DI-orchestrator compatible ----------------------------------------------------------------

    TaskQuery = Annotated[str | None, Query(description="task to scale (default: the job's collector task)")]

    @app.get(
        f"{V2}/job/{{job_id}}/replicas",
        tags=["v2alpha1"],
        response_model=Envelope,
        responses=_V2_ERRORS,
        dependencies=V2_PATH,
    )
    def v2_replicas(ref: Reader) -> Envelope:
        """Addresses (FQDNs) of the job's replicas in rank order. ``job_id`` is ``<namespace>.<name>``."""
        return Envelope(success=True, code=0, message="", data=views.addresses(cached(ref), settings.cluster_domain))

    @app.post(
        f"{V2}/job/{{job_id}}/replicas",
        tags=["v2alpha1"],
        response_model=Envelope,
        responses=_V2_ERRORS,
        dependencies=V2_PATH,
    )
    def v2_add(ref: Writer, body: ReplicasBody, task: TaskQuery = None, key: IdempotencyKey = None) -> Envelope:
        """Add ``replicas`` replicas to the collector task (or ``?task=``)."""
        name = default_task(cached(ref), task)
        out = scale(ref, ScaleRequest.add(name, body.replicas), key)
        return Envelope(success=True, code=0, message=f"added {len(out.added)} replica(s)", data=out.model_dump())

    @app.delete(
        f"{V2}/job/{{job_id}}/replicas",
        tags=["v2alpha1"],
        response_model=Envelope,
        responses=_V2_ERRORS,
        dependencies=V2_PATH,
    )
    def v2_remove(ref: Writer, body: ReplicasBody, task: TaskQuery = None, key: IdempotencyKey = None) -> Envelope:
        """Remove ``replicas`` replicas of the collector task (or ``?task=``), the highest-ranked first."""
        name = default_task(cached(ref), task)
        out = scale(ref, ScaleRequest.remove(name, body.replicas), key)
        return Envelope(success=True, code=0, message=f"removed {len(out.removed)} replica(s)", data=out.model_dump())

    @app.post(
        f"{V2}/job/{{job_id}}/profilings",
        tags=["v2alpha1"],
        response_model=Envelope,
        responses=_V2_ERRORS,
        dependencies=V2_PATH,
    )
    def v2_profilings(ref: Writer, body: Annotated[dict[str, Any], Body()]) -> Envelope:
        """Record profiling data: merged into the DIJob's ``status.profilings``."""
        cached(ref)
        if not backend.record_profilings(ref.namespace, ref.name, body):
            raise ApiError(404, f"DIJob {ref} not found")
        return Envelope(success=True, code=0, message="recorded", data=None)

    # -- clean API ---------------------------------------------------------------------------------

    base = "/v1/namespaces/{namespace}/dijobs/{name}"

    @app.get(base, tags=["v1"], response_model=JobSummary, responses=_ERRORS, dependencies=V1_PATH)
    def v1_job(ref: Reader) -> JobSummary:
        """Tasks, live replica counts, phase and membership generation."""
        return views.summary(cached(ref))

    @app.get(f"{base}/replicas", tags=["v1"], response_model=list[ReplicaOut], responses=_ERRORS, dependencies=V1_PATH)
    def v1_replicas(ref: Reader) -> list[ReplicaOut]:
        """Live replicas in rank order: name, rank, task, index, FQDN, pod and its phase."""
        return views.replica_rows(cached(ref), settings.cluster_domain)

    @app.put(
        f"{base}/tasks/{{task}}/replicas", tags=["v1"], response_model=ScaleOut, responses=_ERRORS, dependencies=V1_PATH
    )
    def v1_set(ref: Writer, task: str, body: ReplicasBody, key: IdempotencyKey = None) -> ScaleOut:
        """Set a task's replica count. Survivors keep running; removed are the highest-ranked."""
        cached(ref)
        return scale(ref, ScaleRequest.set_replicas(task, body.replicas), key)

    @app.post(f"{base}/replicas:remove", tags=["v1"], response_model=ScaleOut, responses=_ERRORS, dependencies=V1_PATH)
    def v1_remove(ref: Writer, body: RemoveReplicasBody, key: IdempotencyKey = None) -> ScaleOut:
        """Remove exactly the named replicas (``<task>-<index>``)."""
        cached(ref)
        return scale(ref, ScaleRequest.remove_named(body.replicas), key)

    return app
