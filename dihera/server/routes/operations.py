"""Liveness, readiness (the caches synced) and Prometheus metrics."""

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from dihera.server.dependencies import Context
from dihera.server.models import ErrorBody

__all__ = ["router"]

router = APIRouter(tags=["operations"])


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz", responses={503: {"model": ErrorBody}})
async def readyz(ctx: Context) -> JSONResponse:
    if ctx.backend.ready():
        return JSONResponse({"status": "ready"})
    return JSONResponse({"detail": "caches not synced yet"}, status_code=503)


@router.get("/metrics", response_class=Response)
def prometheus(ctx: Context) -> Response:
    return Response(generate_latest(ctx.metrics.registry), media_type=CONTENT_TYPE_LATEST)
