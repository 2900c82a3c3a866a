"""The clean API: a job's summary and replicas, set a task's replicas, remove named replicas."""

from fastapi import APIRouter, Response

from dihera.scaling import ScaleRequest
from dihera.server import views
from dihera.server.answers import to_json
from dihera.server.dependencies import (
    V1_PATH,
    IdempotencyKey,
    Reader,
    Writer,
    answer,
    cached,
    job_sources,
    replica_sources,
    scale,
)
from dihera.server.errors import ERRORS
from dihera.server.models import JobSummary, RemoveReplicasBody, ReplicaOut, ReplicasBody, ScaleOut

__all__ = ["router"]

router = APIRouter(
    prefix="/v1/namespaces/{namespace}/dijobs/{name}", tags=["v1"], responses=ERRORS, dependencies=V1_PATH
)


@router.get("", response_model=JobSummary)
async def v1_job(call: Reader) -> Response:
    """Tasks, live replica counts, phase and membership generation."""
    job = cached(call)
    return answer(call, "v1-job", job_sources(job), lambda: to_json(views.summary(job)))


@router.get("/replicas", response_model=list[ReplicaOut])
async def v1_replicas(call: Reader) -> Response:
    """Live replicas in rank order: name, rank, task, index, FQDN, pod and its phase."""
    job = cached(call)

    def rows() -> bytes:
        return to_json(views.replica_rows(job, call.ctx.settings.cluster_domain), ReplicaOut)

    return answer(call, "v1-replicas", replica_sources(job), rows)


@router.put("/tasks/{task}/replicas", response_model=ScaleOut)
def v1_set(call: Writer, task: str, body: ReplicasBody, key: IdempotencyKey = None) -> ScaleOut:
    """Set a task's replica count. Survivors keep running; removed are the highest-ranked."""
    cached(call)
    return scale(call, ScaleRequest.set_replicas(task, body.replicas), key)


@router.post("/replicas:remove", response_model=ScaleOut)
def v1_remove(call: Writer, body: RemoveReplicasBody, key: IdempotencyKey = None) -> ScaleOut:
    """Remove exactly the named replicas (``<task>-<index>``)."""
    cached(call)
    return scale(call, ScaleRequest.remove_named(body.replicas), key)
