"""Short descriptions of Kubernetes API errors (the server's own message, not the HTTP dump)."""

from __future__ import annotations

import json

from kubernetes.client.exceptions import ApiException

__all__ = ["describe_api_error"]


def describe_api_error(err: ApiException) -> str:
    """``409 Conflict: <the API server's message>``."""
    message = ""
    try:
        message = str(json.loads(err.body or "{}").get("message") or "")
    except (TypeError, ValueError, AttributeError):
        message = str(err.body or "")
    return f"{err.status} {err.reason}: {message}".rstrip(": ")
