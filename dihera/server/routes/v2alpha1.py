"""DI-orchestrator's routes and envelope: replica addresses, add/remove collectors, profilings.

``job_id`` is ``<namespace>.<name>``, split on the first dot.
"""

from collections.abc import Callable
from typing import Annotated

from fastapi import APIRouter, Body, Query, Response

from dihera.constants import TOKEN_EXTRA_POD_NAME, TOKEN_EXTRA_POD_UID
from dihera.kube.snapshot import JobSnapshot
from dihera.profilings import (
    MAX_DEPTH,
    MAX_KEYS,
    MAX_REPORT_BYTES,
    MAX_REPORT_KEYS,
    MAX_TOTAL_BYTES,
    MAX_VALUE_BYTES,
    ProfilingsConflict,
    ProfilingsError,
    report_problems,
)
from dihera.rl.merge import FIGURES
from dihera.scaling import Action, ScaleRequest
from dihera.server import views
from dihera.server.answers import to_json
from dihera.server.dependencies import (
    V2_PATH,
    IdempotencyKey,
    JobCall,
    Reader,
    Reporter,
    Writer,
    answer,
    cached,
    default_task,
    job_sources,
    scale,
)
from dihera.server.errors import V2, V2_ERRORS, ApiError
from dihera.server.models import Envelope, ReplicasBody, TrainingReport
from dihera.server.training import TooManyReplicas
from dihera.sweeps.sweep import METRIC_NAME

__all__ = ["router"]

router = APIRouter(
    prefix=f"{V2}/job/{{job_id}}",
    tags=["v2alpha1"],
    responses=V2_ERRORS,
    dependencies=V2_PATH,
)
TaskQuery = Annotated[str | None, Query(description="task to scale (default: the job's collector task)")]


@router.get("/replicas", response_model=Envelope)
async def v2_replicas(call: Reader) -> Response:
    """Addresses (FQDNs) of the job's replicas in rank order. ``job_id`` is ``<namespace>.<name>``."""
    job = cached(call)

    def envelope() -> bytes:
        data = views.addresses(job, call.ctx.settings.cluster_domain)
        return to_json(Envelope(success=True, code=0, message="", data=data))

    return answer(call, "v2-replicas", job_sources(job), envelope)


def _scale_collectors(
    call: JobCall,
    request: Callable[[str, int], ScaleRequest],
    body: ReplicasBody,
    task: str | None,
    key: str | None,
) -> Envelope:
    """DI-orchestrator's add/remove: ``body.replicas`` replicas of the collector task (or ``?task=``)."""
    asked = request(default_task(cached(call), task), body.replicas)
    out = scale(call, asked, key)
    done = f"added {len(out.added)}" if asked.action is Action.ADD else f"removed {len(out.removed)}"
    return Envelope(success=True, code=0, message=f"{done} replica(s)", data=out.model_dump())


@router.post("/replicas", response_model=Envelope)
def v2_add(call: Writer, body: ReplicasBody, task: TaskQuery = None, key: IdempotencyKey = None) -> Envelope:
    """Add ``replicas`` replicas to the collector task (or ``?task=``)."""
    return _scale_collectors(call, ScaleRequest.add, body, task, key)


@router.delete("/replicas", response_model=Envelope)
def v2_remove(call: Writer, body: ReplicasBody, task: TaskQuery = None, key: IdempotencyKey = None) -> Envelope:
    """Remove ``replicas`` replicas of the collector task (or ``?task=``), the highest-ranked first."""
    return _scale_collectors(call, ScaleRequest.remove, body, task, key)


def _from_its_own_pod(call: JobCall, job: JobSnapshot) -> str | None:
    """A pod's own token (bound to the pod: its TokenReview names it) reports only into the DIJob the pod is a
    replica of (the job's cached pods), so one job's code cannot write another's metrics, e.g. a sweep trial
    its rivals'. Other tokens (a person's, a TokenRequest without a pod) are judged by their right alone."""
    extra = call.identity.extra if call.identity is not None else {}
    names, uids = extra.get(TOKEN_EXTRA_POD_NAME) or (), extra.get(TOKEN_EXTRA_POD_UID) or ()
    if not names:
        return None
    for pod in job.pods:
        meta = pod.get("metadata") or {}
        if meta.get("name") == names[0] and (not uids or meta.get("uid") == uids[0]):
            return str(names[0])
    raise ApiError(
        403,
        f"pod {call.ref.namespace}/{names[0]} is not a replica of DIJob {call.ref}: a pod's token reports only "
        "into its own job's status (DI_JOB_ID)",
    )


_REPORT = (
    f"a JSON object: at most {MAX_REPORT_KEYS} keys matching {METRIC_NAME.pattern}, each value at most "
    f"{MAX_VALUE_BYTES} bytes as JSON and {MAX_DEPTH} levels deep, {MAX_REPORT_BYTES} bytes in all; a null "
    f"removes a key. The merged status.profilings holds at most {MAX_KEYS} keys and {MAX_TOTAL_BYTES} bytes"
)


@router.post("/profilings", response_model=Envelope)
def v2_profilings(call: Reporter, body: Annotated[dict[str, object], Body(description=_REPORT)]) -> Envelope:
    """Record profiling data: merged into the DIJob's ``status.profilings`` (a JSON merge patch). The caller
    may ``create`` ``dijobs/profilings`` in the namespace (the chart's ClusterRole ``<fullname>-reporter``); a
    pod's own token reports only into its own job. A report past a bound is refused with 400 naming each
    problem; sending it again does not help."""
    _from_its_own_pod(call, cached(call))
    problems = report_problems(body)
    if problems:
        raise ApiError(400, "; ".join(problems))
    try:
        recorded = call.ctx.backend.record_profilings(call.ref.namespace, call.ref.name, body)
    except ProfilingsError as err:
        raise ApiError(400, str(err)) from err
    except ProfilingsConflict as err:
        raise ApiError(409, str(err)) from err
    if not recorded:
        raise ApiError(404, f"DIJob {call.ref} not found")
    return Envelope(success=True, code=0, message="recorded", data=None)


@router.post("/training", response_model=Envelope, status_code=202)
def v2_training(call: Reporter, body: TrainingReport) -> Envelope:
    """Report one replica's RL figures (docs/training-figures.md): kept as the replica's newest, merged with the
    other replicas' into the DIJob's ``status.training`` at most once a second (202: accepted, written within
    about a second). The same right as a profilings report (``create`` on ``dijobs/profilings``); a pod's own
    token reports only into its own job, as the pod (``replica`` is then ignored). A figure of another role is
    refused (400, naming it); a report past the replicas bound is refused (429: retry when replicas went
    silent)."""
    job = cached(call)
    pod = _from_its_own_pod(call, job)
    figures = body.figures()
    foreign = sorted(set(figures) - set(FIGURES[body.role]))
    if foreign:
        raise ApiError(400, f"body: {', '.join(foreign)} not figures of a {body.role} (its figures: "
                       f"{', '.join(FIGURES[body.role])})")  # fmt: skip
    replica = pod or body.replica or (call.identity.username if call.identity is not None else "") or body.role
    uid = str(job.body["metadata"].get("uid") or "")
    try:
        call.ctx.training.add(call.ref.namespace, call.ref.name, uid, body.role, replica, figures)
    except TooManyReplicas as err:
        raise ApiError(429, str(err)) from err
    return Envelope(success=True, code=0, message="accepted", data=None)
