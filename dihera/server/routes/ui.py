"""Read-only views of a job and of one of its pods: where the Argo UI's links land (dihera.argo_ui); a
sweep's trial pod's link redirects to the view of the DIJob that pod created.

JSON by default; a small HTML page when the caller prefers ``text/html`` (a browser). Served without a
token only when the server's ``anonymous_views`` is on (see :mod:`dihera.server.settings`).
"""

from fastapi import APIRouter, Request, Response
from fastapi.responses import HTMLResponse, RedirectResponse

from dihera.server import pages, views
from dihera.server.answers import to_json
from dihera.server.dependencies import JSON, TRIAL_PATH, V1_PATH, TrialViewer, Viewer, cached
from dihera.server.errors import ERRORS, ApiError
from dihera.server.models import JobView, PodView

__all__ = ["router", "trials"]

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
