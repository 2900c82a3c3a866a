"""Read-only views of a job and of one of its pods: where the Argo UI's links land (dihera.argo_ui); a
sweep's trial pod's link redirects to the view of the DIJob that pod created; a sweep's view lists its trials;
the workflow link redirects to the DIJob's view or the sweep's, by the Workflow's labels Argo put in its query.

JSON by default; a small HTML page when the caller prefers ``text/html`` (a browser). Served without a
token only when the server's ``anonymous_views`` is on (see :mod:`dihera.server.settings`).
"""

import re
from urllib.parse import urlencode

from fastapi import APIRouter, Request, Response
from fastapi.responses import HTMLResponse, RedirectResponse

from dihera.constants import LABEL_EXPERIMENT, LABEL_JOB
from dihera.rl.curve import learning_curve_svg
from dihera.server import pages, views
from dihera.server.answers import to_json
from dihera.server.dependencies import (
    EXPERIMENT_PATH,
    JSON,
    NAME_PATTERN,
    TRIAL_PATH,
    V1_PATH,
    ExperimentViewer,
    TrialViewer,
    Viewer,
    cached,
)
from dihera.server.errors import ERRORS, ApiError
from dihera.server.models import ExperimentView, JobView, PodView
from dihera.sweeps.results import Goal
from dihera.sweeps.sweep import METRIC_NAME

__all__ = ["experiments", "router", "trials", "workflows"]

SVG = "image/svg+xml"
router = APIRouter(
    prefix="/ui/namespaces/{namespace}/dijobs/{name}", tags=["views"], responses=ERRORS, dependencies=V1_PATH
)


def _wants_html(request: Request) -> bool:
    return "text/html" in request.headers.get("accept", "")


@router.get("", response_model=JobView)
async def job_view(call: Viewer, request: Request) -> Response:
    """The job, its replicas and its progress (the Argo UI's workflow link)."""
    view = views.job_view(cached(call), call.ctx.settings.cluster_domain)
    if _wants_html(request):
        return HTMLResponse(pages.job_page(view))
    return Response(to_json(view), media_type=JSON)


@router.get("/curve.svg", response_class=Response, responses={200: {"content": {SVG: {}}}})
async def curve_view(call: Viewer) -> Response:
    """The job's live learning curve (return and env steps/s over iterations, from ``status.training``) as SVG:
    the job view shows it, the Argo UI links to it, ``make demo`` prints its URL."""
    job = cached(call)
    training = (job.body.get("status") or {}).get("training")
    svg = learning_curve_svg(training, str(call.ref))
    return Response(svg, media_type=SVG, headers={"Cache-Control": "no-store"})


@router.get("/pods/{pod}", response_model=PodView)
async def pod_view(call: Viewer, request: Request, pod: str) -> Response:
    """The replica a pod of the job ran or runs (the Argo UI's pod link)."""
    view = views.pod_view(cached(call), pod, call.ctx.settings.cluster_domain)
    if view is None:
        raise ApiError(404, f"pod {pod} is not a pod of DIJob {call.ref} (or it was deleted)")
    if _wants_html(request):
        return HTMLResponse(pages.pod_page(view))
    return Response(to_json(view), media_type=JSON)


trials = APIRouter(
    prefix="/ui/namespaces/{namespace}/trials/{pod}", tags=["views"], responses=ERRORS, dependencies=TRIAL_PATH
)


@trials.get("", status_code=307, response_class=RedirectResponse)
async def trial_view(call: TrialViewer) -> RedirectResponse:
    """To the view of the DIJob a sweep's trial pod created (the Argo UI's pod link on a trial node)."""
    cached(call)  # 404 when the DIJob left the cache meanwhile
    # relative (to /ui/namespaces/<ns>/dijobs/<job>): right behind a proxy that serves the di-server under a path
    return RedirectResponse(f"../dijobs/{call.ref.name}", status_code=307)


experiments = APIRouter(
    prefix="/ui/namespaces/{namespace}/experiments/{name}", tags=["views"], responses=ERRORS,
    dependencies=EXPERIMENT_PATH,
)  # fmt: skip


def _query(request: Request) -> tuple[str, Goal, int | None]:
    """The sweep's metric, goal and trial count from the query (Argo leaves a missing label empty)."""
    q = request.query_params
    metric, goal, trials = q.get("metric") or "evalReturn", q.get("goal") or Goal.MAXIMIZE.value, q.get("trials") or ""
    if not METRIC_NAME.match(metric):
        raise ApiError(400, f"query metric={metric!r}: must match {METRIC_NAME.pattern} (a status.profilings key)")
    if goal not in {g.value for g in Goal}:
        raise ApiError(400, f"query goal={goal!r}: must be maximize or minimize")
    if trials and not trials.isdigit():
        raise ApiError(400, f"query trials={trials!r}: must be a whole number")
    return metric, Goal(goal), int(trials) if trials else None


@experiments.get("", response_model=ExperimentView)
async def experiment_view(call: ExperimentViewer, request: Request, name: str) -> Response:
    """A sweep's trials (the DIJobs labelled with its name): progress, the best so far, a link to each."""
    metric, goal, trials = _query(request)
    namespace = call.ref.namespace
    if not call.ctx.settings.watches(namespace):
        raise ApiError(404, f"sweep {namespace}/{name}: this di-server serves {call.ctx.settings.scope()} only")
    jobs = call.ctx.backend.experiment_jobs(namespace, name)
    if not jobs:
        raise ApiError(404, f"sweep {namespace}/{name} has no DIJob ({LABEL_EXPERIMENT}={name}) yet, or no longer")
    view = views.experiment_view(namespace, name, jobs, metric, goal, trials)
    if _wants_html(request):
        return HTMLResponse(pages.experiment_page(view))
    return Response(to_json(view), media_type=JSON)


workflows = APIRouter(
    prefix="/ui/namespaces/{namespace}/workflows/{name}", tags=["views"], responses=ERRORS,
    dependencies=EXPERIMENT_PATH,
)  # fmt: skip
_NAME = re.compile(rf"^{NAME_PATTERN}$")


@workflows.get("", status_code=307, response_class=RedirectResponse)
async def workflow_link(request: Request, namespace: str, name: str) -> RedirectResponse:
    """The Argo UI's workflow link: to the DIJob's view (``dijob``: the Workflow's ``diengine/job`` label)
    or the sweep's (``experiment`` and its ``metric``, ``goal``, ``trials``), relative, so it also works
    behind a path prefix. Nothing is looked up: the target checks the caller."""
    q = request.query_params
    job, experiment = q.get("dijob") or "", q.get("experiment") or ""
    for key, value in (("dijob", job), ("experiment", experiment)):
        if value and (len(value) > 253 or not _NAME.match(value)):
            raise ApiError(400, f"query {key}={value!r}: not a DIJob or sweep name")
    if job:
        return RedirectResponse(f"../dijobs/{job}", status_code=307)
    if experiment:
        _query(request)  # refused here, not after the redirect
        kept = {k: q[k] for k in ("metric", "goal", "trials") if q.get(k)}
        return RedirectResponse(f"../experiments/{experiment}" + (f"?{urlencode(kept)}" if kept else ""), 307)
    raise ApiError(
        404,
        f"Workflow {namespace}/{name} is neither a DIJob's (label {LABEL_JOB}) "
        f"nor a sweep's (label {LABEL_EXPERIMENT})",
    )
