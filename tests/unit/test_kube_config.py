"""Requests get a default timeout (watches and requests that name their own keep theirs) and are counted."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import yaml

from dihera.kube.config import DEFAULT_REQUEST_TIMEOUT, _wrap_requests, api_client


def test_default_timeout_except_for_watches_and_explicit_timeouts() -> None:
    seen: list[Any] = []

    def send(method: str, url: str, *args: Any, _request_timeout: Any = None, **kw: Any) -> None:
        seen.append(_request_timeout)

    api: Any = SimpleNamespace(rest_client=SimpleNamespace(request=send))
    _wrap_requests(api, (1.0, 2.0), None)
    api.rest_client.request("GET", "https://x/api/v1/pods")
    api.rest_client.request("GET", "https://x/api/v1/pods?watch=true&timeoutSeconds=240")
    api.rest_client.request("PATCH", "https://x/api/v1/pods/a", _request_timeout=5)
    assert seen == [(1.0, 2.0), None, 5]


def _kubeconfig(tmp_path: Path) -> str:
    cfg = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


def test_api_client_applies_the_default(tmp_path: Path) -> None:
    api = api_client(_kubeconfig(tmp_path))
    assert api.configuration.host == "https://127.0.0.1:1"
    assert api.rest_client.request.__wrapped__.__self__ is api.rest_client
    assert DEFAULT_REQUEST_TIMEOUT == (10.0, 60.0)


def test_every_request_is_named_to_the_hook() -> None:
    named: list[tuple[str, str]] = []

    def send(method: str, url: str, *args: Any, **kw: Any) -> None:
        return None

    api: Any = SimpleNamespace(rest_client=SimpleNamespace(request=send))
    _wrap_requests(api, (1.0, 2.0), lambda verb, kind: named.append((verb, kind)))
    api.rest_client.request("GET", "https://x/api/v1/namespaces/ns/pods?labelSelector=diengine%2Fjob%3Dj")
    api.rest_client.request("PATCH", "https://x/apis/diengine.opendilab.org/v2alpha1/namespaces/ns/dijobs/j/status")
    assert named == [("list", "pods"), ("patch", "dijobs/status")]


def test_connections_kept_for_reuse_cover_the_callers_threads(tmp_path: Path) -> None:
    default = api_client(_kubeconfig(tmp_path))
    busy = api_client(_kubeconfig(tmp_path), connections=default.configuration.connection_pool_maxsize + 10)
    pools = busy.rest_client.pool_manager.connection_pool_kw
    assert busy.configuration.connection_pool_maxsize == default.configuration.connection_pool_maxsize + 10
    assert pools["maxsize"] == busy.configuration.connection_pool_maxsize  # what urllib3 keeps per host
    few = api_client(_kubeconfig(tmp_path), connections=1)  # never fewer than the client's default
    assert few.configuration.connection_pool_maxsize == default.configuration.connection_pool_maxsize
