"""DI-orchestrator's routes and envelope: replica addresses, add/remove collectors, profilings.

``job_id`` is ``<namespace>.<name>``, split on the first dot.
"""

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Body, Query, Response

from dihera.scaling import Action, ScaleRequest
from dihera.server import views
from dihera.server.answers import to_json
from dihera.server.dependencies import (
    V2_PATH,
    Context,
    IdempotencyKey,
    JobRef,
    Reader,
    Writer,
    answer,
    cached,
    default_task,
    scale,
)
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
async def v2_replicas(ref: Reader, ctx: Context) -> Response:
    """Addresses (FQDNs) of the job's replicas in rank order. ``job_id`` is ``<namespace>.<name>``."""
    job = cached(ctx, ref)

    def envelope() -> bytes:
        data = views.addresses(job, ctx.settings.cluster_domain)
        return to_json(Envelope(success=True, code=0, message="", data=data))

    return answer(ctx, "v2-replicas", ref, (job.body, job.configmap), envelope)


def _scale_collectors(
    ctx: Context,
    ref: JobRef,
    request: Callable[[str, int], ScaleRequest],
    body: ReplicasBody,
    task: str | None,
    key: str | None,
) -> Envelope:
    """DI-orchestrator's add/remove: ``body.replicas`` replicas of the collector task (or ``?task=``)."""
    asked = request(default_task(cached(ctx, ref), task), body.replicas)
    out = scale(ctx, ref, asked, key)
    done = f"added {len(out.added)}" if asked.action is Action.ADD else f"removed {len(out.removed)}"
    return Envelope(success=True, code=0, message=f"{done} replica(s)", data=out.model_dump())


@router.post("/replicas", response_model=Envelope)
def v2_add(
    ref: Writer, ctx: Context, body: ReplicasBody, task: TaskQuery = None, key: IdempotencyKey = None
) -> Envelope:
    """Add ``replicas`` replicas to the collector task (or ``?task=``)."""
    return _scale_collectors(ctx, ref, ScaleRequest.add, body, task, key)


@router.delete("/replicas", response_model=Envelope)
def v2_remove(
    ref: Writer, ctx: Context, body: ReplicasBody, task: TaskQuery = None, key: IdempotencyKey = None
) -> Envelope:
    """Remove ``replicas`` replicas of the collector task (or ``?task=``), the highest-ranked first."""
    return _scale_collectors(ctx, ref, ScaleRequest.remove, body, task, key)


@router.post("/profilings", response_model=Envelope)
def v2_profilings(ref: Writer, ctx: Context, body: Annotated[dict[str, Any], Body()]) -> Envelope:
    """Record profiling data: merged into the DIJob's ``status.profilings``."""
    cached(ctx, ref)
    if not ctx.backend.record_profilings(ref.namespace, ref.name, body):
        raise ApiError(404, f"DIJob {ref} not found")
    return Envelope(success=True, code=0, message="recorded", data=None)
