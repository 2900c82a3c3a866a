"""Request bodies: checked before a byte of them is read, and bounded.

FastAPI reads and parses a body parameter before it solves the dependency that checks the token: a
300 MB body without a token cost the di-server ~950 MB before its 401. This ASGI middleware sits in front
of the routes and looks only at the headers of a request that carries a body (``Content-Length`` > 0 or
``Transfer-Encoding: chunked``):

- with auth on, the bearer token must be valid (``Access.identity``: the TokenReview, remembered; its
  budget of reviews answers 429): else 401, the body unread. No route that takes no token has a body,
  so any request with a body needs one (an anonymous view is a ``GET`` without a body: it passes);
- a body over ``ServerSettings.max_body_bytes`` is answered 413: by its ``Content-Length`` at once, and
  a chunked one as it arrives, at the first chunk past the bound;
- a body within the bound is read here (never more than the bound is kept) and handed to the routes.

A refusal closes the connection (``Connection: close``): uvicorn stops reading the socket once 64 KiB are
waiting unread, so the rest of the body never enters the process. Requests without a body pass
untouched; the routes still check the token and the caller's right (SubjectAccessReview).
"""

from __future__ import annotations

from collections.abc import Callable

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from dihera.server.dependencies import ServerContext
from dihera.server.errors import ApiError, error_body

__all__ = ["BodyGate"]


class _Refused(Exception):
    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers or {}


def _framing(scope: Scope) -> tuple[int | None, bool, str | None]:
    """``Content-Length`` (None when absent), whether the body is chunked, and the bearer token (None: none)."""
    length: int | None = None
    chunked, token = False, None
    for name, value in scope["headers"]:
        if name == b"content-length":
            text = value.decode("latin-1").strip()
            if not text.isdigit():
                raise _Refused(400, f"header Content-Length: {text[:40]!r} is not a number of bytes")
            length = int(text)
        elif name == b"transfer-encoding":
            chunked = chunked or b"chunked" in value.lower()
        elif name == b"authorization":
            scheme, _, rest = value.decode("latin-1").partition(" ")
            token = rest.strip() if scheme.lower() == "bearer" and rest.strip() else None
    return length, chunked, token


class BodyGate:
    """ASGI middleware: a body's token checked before it is read, and its size bounded (inside the request
    metrics, which count the refusals, and before the remembered reads and the routes)."""

    def __init__(self, app: ASGIApp, context: Callable[[], ServerContext]) -> None:
        self.app, self._context = app, context

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            length, chunked, token = _framing(scope)
            if not chunked and not length:
                await self.app(scope, receive, send)  # no body: nothing to read before the routes check
                return
            ctx = self._context()
            await self._check_token(ctx, token)
            bound = ctx.settings.max_body_bytes
            if not chunked and length is not None and length > bound:
                raise _Refused(413, _too_large(bound, f"Content-Length is {length}"))
            body = await _read(receive, bound)
        except _Refused as refused:
            await _refuse(scope, receive, send, refused)
            return
        if body is None:
            return  # the client went away
        await self.app(scope, _replay(body, receive), send)

    @staticmethod
    async def _check_token(ctx: ServerContext, token: str | None) -> None:
        if not ctx.settings.auth:
            return
        if token is None:
            raise _Refused(401, "missing bearer token (header 'Authorization: Bearer <token>'); the body was not read")
        try:
            identity = await ctx.access.identity(token)
        except ApiError as err:  # the budget of reviews is spent: 429
            raise _Refused(err.status, err.message, err.headers) from err
        if identity is None:
            raise _Refused(401, "the bearer token was not accepted by the Kubernetes API server; the body was not read")


def _too_large(bound: int, what: str) -> str:
    return f"request body too large: {what}, over the di-server's bound of {bound} bytes (max_body_bytes)"


async def _read(receive: Receive, bound: int) -> bytes | None:
    """The whole body, kept only while within ``bound`` (413 past it); None when the client disconnected."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk: bytes = message.get("body", b"")
        size += len(chunk)
        if size > bound:
            raise _Refused(413, _too_large(bound, f"more than {bound} bytes were sent"))
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives the body read, then whatever the client sends next (its disconnect)."""
    given = False

    async def replay() -> Message:
        nonlocal given
        if given:
            return await receive()
        given = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


async def _refuse(scope: Scope, receive: Receive, send: Send, refused: _Refused) -> None:
    """The app's error JSON (the envelope under ``/v2alpha1``), and the connection closed: its unread body is
    never read."""
    headers = {**refused.headers, "Connection": "close"}
    response = JSONResponse(error_body(scope["path"], refused.message), status_code=refused.status, headers=headers)
    await response(scope, receive, send)
