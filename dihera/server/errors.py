"""How the di-server answers an error: ``{"detail"}`` on ``/v1``, DI-orchestrator's envelope on ``/v2alpha1``.

A 500 says in one line what failed (the exception's type, or the status the Kubernetes API server answered)
and nothing of the API server's headers or body: those go to the di-server's log, which the caller cannot read.
"""

import json
import logging
from collections.abc import Mapping

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match, Route

from dihera.server.models import Envelope, ErrorBody

__all__ = ["ERRORS", "V2", "V2_ERRORS", "ApiError", "error_body", "install_error_handlers", "internal_error"]

log = logging.getLogger("dihera.server.app")
V2 = "/v2alpha1"
ERRORS: dict[int | str, dict[str, object]] = {
    code: {"model": ErrorBody, "description": text}
    for code, text in {
        400: "malformed request, or outside the job's minReplicas/maxReplicas",
        401: "no bearer token, or the API server does not accept it",
        403: "the caller may not do this on DIJobs in the namespace",
        404: "no such job, task or replica",
        409: "the job cannot be scaled now, or the Idempotency-Key was used for another request",
        413: "the request body is larger than the server's bound (max_body_bytes)",
        429: "too many new bearer tokens to review this second; retry after Retry-After seconds",
    }.items()
}
V2_ERRORS: dict[int | str, dict[str, object]] = {k: {**v, "model": Envelope} for k, v in ERRORS.items()}


class ApiError(Exception):
    def __init__(self, status: int, message: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = dict(headers or {})


def error_body(path: str, message: str) -> dict[str, object]:
    """An error's JSON for a request to ``path``: the envelope under ``/v2alpha1``, else ``{"detail"}``."""
    if path.startswith(V2):
        return {"success": False, "code": 1, "message": message, "data": None}
    return {"detail": message}


def _error_response(
    request: Request, status: int, message: str, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(error_body(request.url.path, message), status_code=status, headers=headers)


def internal_error(exc: BaseException) -> str:
    """What a 500 says about ``exc``, in one line: the API server's status and reason for its errors (kubernetes'
    ApiException, told by its ``status`` and ``reason``), else the exception's type; never its text, which for
    an ApiException holds the API server's headers and body."""
    status, reason = getattr(exc, "status", None), getattr(exc, "reason", None)
    if isinstance(status, int) and isinstance(reason, str):
        return f"internal error: the Kubernetes API server answered {status} {reason.splitlines()[0][:80]}"
    return f"internal error: {type(exc).__name__}"


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


async def _api_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    return _error_response(request, exc.status, exc.message, exc.headers)


async def _invalid(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    return _error_response(request, 400, _validation_message(exc))


async def _http(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    headers = dict(exc.headers or {})
    if exc.status_code == 405:  # Starlette names only the first route's methods; a path has several routes
        headers["Allow"] = _allowed_methods(request.app, request)
    return _error_response(request, exc.status_code, str(exc.detail), headers)


async def _crash(request: Request, exc: Exception) -> JSONResponse:
    log.exception("%s %s failed", request.method, request.url.path)  # the whole exception, headers and body
    return _error_response(request, 500, f"{internal_error(exc)} (the di-server's log has the details)")


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(RequestValidationError, _invalid)
    app.add_exception_handler(StarletteHTTPException, _http)
    app.add_exception_handler(Exception, _crash)
