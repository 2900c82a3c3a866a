"""The di-server's HTTP API (FastAPI): DI-orchestrator's ``/v2alpha1`` routes and the clean ``/v1`` API.

Every job route authenticates the caller's bearer token (TokenReview, 401), then asks whether that
identity may ``get`` (reads) or ``patch`` (writes) DIJobs in the job's namespace, taken from the
path only (SubjectAccessReview, 403); both answers are remembered briefly (:mod:`dihera.server.access`). Reads
come from the backend's watch-backed cache. The read-only ``/ui`` views (where the Argo UI's links land)
answer a caller without a token only when ``ServerSettings.anonymous_views`` is on. A request with a body
is refused (401, 413) before a byte of it is read unless its token is valid and its size within the bound
(:mod:`dihera.server.gate`).

No ``/docs`` or ``/redoc``: FastAPI's pages load Swagger UI and ReDoc from a CDN, and the di-server makes no
browser fetch from outside; ``/openapi.json`` describes the API.

Where things are: the routes in :mod:`dihera.server.routes` (one router per API), what they depend on
(identity, job reference, scaling with an Idempotency-Key) in :mod:`dihera.server.dependencies`, how
errors are answered in :mod:`dihera.server.errors`.
"""

from fastapi import FastAPI
from fastapi.telemetry import TelemetryConfig

from dihera.server import routes
from dihera.server.access import Access, AuthCache, ReviewBudget
from dihera.server.answers import AnswerCache
from dihera.server.backend import Backend
from dihera.server.dependencies import ServerContext
from dihera.server.errors import ApiError, install_error_handlers
from dihera.server.fastpath import RememberedReads
from dihera.server.gate import BodyGate
from dihera.server.metrics import ObserveRequests, ServerMetrics
from dihera.server.settings import ServerSettings
from dihera.server.training import TrainingReports, training_of

__all__ = ["ApiError", "create_app"]

#: FastAPI's native OpenTelemetry looks for providers on every request; the di-server exports Prometheus metrics.
NO_TELEMETRY: TelemetryConfig = {"tracing": False, "metrics": False, "logs": False}


def create_app(settings: ServerSettings, backend: Backend) -> FastAPI:
    """The di-server app over ``backend``; nothing is read or started here."""
    app = FastAPI(
        telemetry=NO_TELEMETRY,
        title="dihera di-server",
        version="1",
        summary="Read and scale running DI-engine jobs (DIJobs on Argo Workflows).",
        description=(
            "Callers present a Kubernetes bearer token. Reads need `get` on `dijobs`, writes `patch`, in the "
            "job's namespace. `/v2alpha1` keeps DI-orchestrator's routes and envelope; `/v1` is the clean API."
        ),
        docs_url=None,
        redoc_url=None,
    )
    metrics = ServerMetrics()
    cache = AuthCache(settings.auth_cache_seconds, settings.auth_denied_cache_seconds)
    access = Access(backend, cache, ReviewBudget(settings.token_reviews_per_second))
    training = TrainingReports(lambda ns, name: training_of(backend.job(ns, name)), backend.write_training)
    app.state.dihera = ServerContext(settings, backend, metrics, access, AnswerCache(), training)
    # the last added runs first: the request metrics, then the body gate (a body's token checked before it is
    # read, its size bounded), then the remembered reads, then FastAPI's routes
    app.add_middleware(RememberedReads, context=lambda: app.state.dihera)
    app.add_middleware(BodyGate, context=lambda: app.state.dihera)
    app.add_middleware(ObserveRequests, metrics=metrics)
    install_error_handlers(app)
    for router in (
        routes.operations, routes.v2alpha1, routes.v1, routes.ui, routes.trials, routes.experiments, routes.workflows
    ):  # fmt: skip
        app.include_router(router)
    return app
