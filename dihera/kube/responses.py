"""Raw API responses (``_preload_content=False``): decoded or discarded, and their connection given back.

urllib3 returns a raw response's connection to the client's pool only once its body has been read: a
response left unread keeps it, and the next request opens a new connection, with a TLS handshake on both
sides (measured on the local control plane: 20 unread GETs opened 19 connections, 20 drained ones none).
Every raw call goes through :func:`decoded` or :func:`discard`. Bodies are decoded with orjson when the
operator extras are installed (a big job's pod list is tens of MB of JSON), else with the standard library.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from urllib3.response import BaseHTTPResponse

_loads: Callable[[bytes], object]
try:
    import orjson

    _loads = orjson.loads
except ModuleNotFoundError:  # a plain install (no operator extras): the standard library's decoder
    import json

    _loads = json.loads

__all__ = ["decoded", "discard"]


def _raw(resp: object) -> BaseHTTPResponse:
    """A call made with ``_preload_content=False`` answers the raw response (the generated client's
    annotations name the model it would have decoded)."""
    return cast(BaseHTTPResponse, resp)


def decoded(resp: object) -> dict[str, object]:
    """The JSON object a raw response carries; its connection goes back to the pool."""
    raw = _raw(resp)
    try:
        data = cast(dict[str, object], _loads(raw.data))
    finally:
        raw.release_conn()
    return data


def discard(resp: object) -> None:
    """Read and drop a raw response's body (the object a DELETE or a create echoes), so its connection is
    reused."""
    _raw(resp).drain_conn()
