"""Remembered reads answered before the framework: the di-server's hot path.

A ``GET`` of a job's summary (``/v1/.../dijobs/{name}``), its replicas (``/v1/.../replicas``) or its
addresses (``/v2alpha1/job/{job_id}/replicas``) is sent as is when both of these are remembered:

- the answer, computed from exactly the cached objects the job has now
  (:class:`~dihera.server.answers.AnswerCache`);
- the caller's token review and its ``get`` right on that DIJob, both positive
  (:class:`~dihera.server.access.AuthCache`), or auth is off.

Anything else goes through FastAPI unchanged, which checks, computes and remembers: a first request, a
job that changed, an unknown, rejected or refused token, a path FastAPI would refuse, any query string.
So this path only repeats an answer the full path gave for the same objects, to a token the full path
accepted for that job within the auth cache's TTL, with the same status, headers and body; it skips
FastAPI's routing and dependency resolution, which cost about half of the CPU of such a read.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from starlette.types import ASGIApp, Receive, Scope, Send

from dihera.kube.snapshot import JobSnapshot
from dihera.server.dependencies import (
    JSON,
    NAME_PATTERN,
    NAMESPACE_PATTERN,
    ServerContext,
    job_sources,
    replica_sources,
)
from dihera.server.errors import V2

__all__ = ["RememberedReads"]


@dataclass(frozen=True)
class _Read:
    """One read route: its path as FastAPI declares it (what the request metrics label it by, from
    ``scope["route"].path``), its answer's key and the objects it is computed from."""

    path: str
    pattern: re.Pattern[str]
    key: str
    sources: Callable[[JobSnapshot], tuple[object, ...]]


_NS, _NAME = f"(?P<namespace>{NAMESPACE_PATTERN})", f"(?P<name>{NAME_PATTERN})"
_V1, _V1_RE = "/v1/namespaces/{namespace}/dijobs/{name}", rf"/v1/namespaces/{_NS}/dijobs/{_NAME}"
_JOB = job_sources
_READS = (
    _Read(f"{V2}/job/{{job_id}}/replicas", re.compile(rf"{V2}/job/{_NS}\.{_NAME}/replicas"), "v2-replicas", _JOB),
    _Read(_V1, re.compile(_V1_RE), "v1-job", job_sources),
    _Read(f"{_V1}/replicas", re.compile(f"{_V1_RE}/replicas"), "v1-replicas", replica_sources),
)
#: FastAPI's own limits on the path parameters (dependencies.JobId, Namespace, Name).
_MAX_JOB_ID, _MAX_NAMESPACE, _MAX_NAME = 317, 63, 253


class RememberedReads:
    """ASGI middleware in front of the routes (inside the request metrics, which count what it serves)."""

    def __init__(self, app: ASGIApp, context: Callable[[], ServerContext]) -> None:
        self.app, self._context = app, context
        self.served = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "GET" and not scope["query_string"]:
            hit = self._remembered(scope)
            if hit is not None:
                read, body = hit
                scope["route"] = read  # the request metrics label it by its path, as FastAPI's route
                headers = [(b"content-length", str(len(body)).encode()), (b"content-type", JSON.encode())]
                await send({"type": "http.response.start", "status": 200, "headers": headers})
                await send({"type": "http.response.body", "body": body})
                self.served += 1
                return
        await self.app(scope, receive, send)

    def _remembered(self, scope: Scope) -> tuple[_Read, bytes] | None:
        path: str = scope["path"]
        for read in _READS:
            match = read.pattern.fullmatch(path)
            if match is None:
                continue
            namespace, name = match["namespace"], match["name"]
            if read.key == "v2-replicas":
                # FastAPI's JobId: one parameter <namespace>.<name>, split on the first dot
                if len(namespace) + 1 + len(name) > _MAX_JOB_ID:
                    return None
            elif len(namespace) > _MAX_NAMESPACE or len(name) > _MAX_NAME:
                return None
            ctx = self._context()
            if not ctx.settings.watches(namespace) or not self._allowed(ctx, scope, namespace, name):
                return None
            job = ctx.backend.job(namespace, name)
            if job is None:
                return None
            body = ctx.answers.peek((read.key, namespace, name), read.sources(job))
            return None if body is None else (read, body)
        return None

    @staticmethod
    def _allowed(ctx: ServerContext, scope: Scope, namespace: str, name: str) -> bool:
        if not ctx.settings.auth:
            return True
        for header, value in scope["headers"]:
            if header == b"authorization":
                scheme, _, token = value.decode("latin-1").partition(" ")
                return (
                    scheme.lower() == "bearer"
                    and bool(token)
                    and ctx.access.remembered_allowed(token, "get", namespace, name)
                )
        return False
