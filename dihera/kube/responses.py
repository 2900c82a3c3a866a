"""Raw API responses (``_preload_content=False``): decoded or discarded, and their connection given back.

urllib3 returns a raw response's connection to the client's pool only once its body has been read: a
response left unread keeps it, and the next request opens a new connection, with a TLS handshake on both
sides (measured on the local control plane: 20 unread GETs opened 19 connections, 20 drained ones none).
Every raw call goes through :func:`decoded` or :func:`discard`. Bodies are decoded with orjson when the
operator extras are installed (a big job's pod list is tens of MB of JSON), else with the standard library.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_loads: Callable[[bytes], Any]
try:
    import orjson

    _loads = orjson.loads
except ModuleNotFoundError:  # a plain install (no operator extras): the standard library's decoder
    import json

    _loads = json.loads

__all__ = ["decoded", "discard"]


def decoded(resp: Any) -> dict[str, Any]:
    """The JSON object a raw response carries; its connection goes back to the pool."""
    try:
        data: dict[str, Any] = _loads(resp.data)
    finally:
        resp.release_conn()
    return data


def discard(resp: Any) -> None:
    """Read and drop a raw response's body (the object a DELETE or a create echoes), so its connection is
    reused."""
    resp.drain_conn()
