"""Name an API request by verb and kind (pure), as Kubernetes' audit log does: ``get pods``, ``list workflows``.

:func:`dihera.kube.config.api_client` calls a hook with these names for every request it sends, so a
component can count its reads and writes in one place (the controller's ``dihera_api_requests_total``).
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

__all__ = ["request_kind", "request_verb"]

_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


def _segments(url: str) -> list[str]:
    """The resource part of ``/api/v1/namespaces/ns/pods/p`` or ``/apis/g/v/namespaces/ns/r/n/status``."""
    parts = [p for p in urlsplit(url).path.split("/") if p]
    if parts[:1] == ["api"]:
        parts = parts[2:]  # api, v1
    elif parts[:1] == ["apis"]:
        parts = parts[3:]  # apis, group, version
    if len(parts) >= 2 and parts[0] == "namespaces" and len(parts) != 2:
        parts = parts[2:]  # a namespaced resource (``namespaces/ns`` alone is the Namespace itself)
    return parts


def request_kind(url: str) -> str:
    """The resource (plural) a request is about, with its subresource: ``pods``, ``dijobs/status``."""
    parts = _segments(url)
    if not parts:
        return "-"
    return f"{parts[0]}/{parts[2]}" if len(parts) >= 3 else parts[0]


def request_verb(method: str, url: str) -> str:
    """``get`` (one object), ``list``, ``watch`` (``watch=true``), ``create``, ``update``, ``patch``, ``delete``."""
    method = method.upper()
    if method != "GET":
        return _VERBS.get(method, method.lower())
    if parse_qs(urlsplit(url).query).get("watch", [""])[0] in ("true", "1"):
        return "watch"
    return "get" if len(_segments(url)) >= 2 else "list"
