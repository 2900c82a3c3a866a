"""DI-orchestrator's routes and envelope: replica addresses, add/remove collectors, profilings.

``job_id`` is ``<namespace>.<name>``, split on the first dot.
"""

from typing import Annotated, Any

from fastapi import APIRouter, Body, Query

from dihera.scaling import ScaleRequest
from dihera.server import views
from dihera.server.dependencies import V2_PATH, Context, IdempotencyKey, Reader, Writer, cached, default_task, scale
from dihera.server.errors import V2, V2_ERRORS, ApiError
from dihera.server.models import Envelope, ReplicasBody

__all__ = ["router"]

router = APIRouter(
    prefix=f"{V2}/job/{{job_id}}",
    tags=["v2alpha1"],
    responses=V2_ERRORS,
    dependencies=V2_PATH,
)
TaskQuery = Annotated[str | None, Query(description="task to scale (default: the job's collector task)")]


@router.get("/replicas", response_model=Envelope)
def v2_replicas(ref: Reader, ctx: Context) -> Envelope:
    """Addresses (FQDNs) of the job's replicas in rank order. ``job_id`` is ``<namespace>.<name>``."""
    data = views.addresses(cached(ctx, ref), ctx.settings.cluster_domain)
    return Envelope(success=True, code=0, message="", data=data)


@router.post("/replicas", response_model=Envelope)
def v2_add(
    ref: Writer, ctx: Context, body: ReplicasBody, task: TaskQuery = None, key: IdempotencyKey = None
) -> Envelope:
    """Add ``replicas`` replicas to the collector task (or ``?task=``)."""
    name = default_task(cached(ctx, ref), task)
    out = scale(ctx, ref, ScaleRequest.add(name, body.replicas), key)
    return Envelope(success=True, code=0, message=f"added {len(out.added)} replica(s)", data=out.model_dump())


@router.delete("/replicas", response_model=Envelope)
def v2_remove(
    ref: Writer, ctx: Context, body: ReplicasBody, task: TaskQuery = None, key: IdempotencyKey = None
) -> Envelope:
    """Remove ``replicas`` replicas of the collector task (or ``?task=``), the highest-ranked first."""
    name = default_task(cached(ctx, ref), task)
    out = scale(ctx, ref, ScaleRequest.remove(name, body.replicas), key)
    return Envelope(success=True, code=0, message=f"removed {len(out.removed)} replica(s)", data=out.model_dump())


@router.post("/profilings", response_model=Envelope)
def v2_profilings(ref: Writer, ctx: Context, body: Annotated[dict[str, Any], Body()]) -> Envelope:
    """Record profiling data: merged into the DIJob's ``status.profilings``."""
    cached(ctx, ref)
    if not ctx.backend.record_profilings(ref.namespace, ref.name, body):
        raise ApiError(404, f"DIJob {ref} not found")
    return Envelope(success=True, code=0, message="recorded", data=None)
