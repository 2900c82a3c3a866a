"""Build a Kubernetes API client: from a kubeconfig file, or in-cluster when none is given."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable

from kubernetes import client, config

from dihera.kube.requests import request_kind, request_verb

__all__ = ["DEFAULT_REQUEST_TIMEOUT", "OnRequest", "api_client"]

#: Called with ``(verb, kind)`` (:mod:`dihera.kube.requests`) before every request an API client sends.
OnRequest = Callable[[str, str], None]

#: (connect, read) seconds for every request that names no timeout of its own. The client's
#: default is to wait forever, so one stalled connection could freeze a reconcile for good.
#: Watches (``watch=true``) are left alone: they are long reads by design and carry their own limit.
DEFAULT_REQUEST_TIMEOUT = (10.0, 60.0)


def _wrap_requests(
    api: client.ApiClient, timeout: tuple[float, float], on_request: OnRequest | None
) -> client.ApiClient:
    """Every request of ``api`` passes here: the default timeout, and ``on_request`` to count it."""
    send: Callable[..., object] = api.rest_client.request

    @functools.wraps(send)
    def request(method: str, url: str, *args: object, _request_timeout: object = None, **kwargs: object) -> object:
        if _request_timeout is None and "watch=true" not in url:
            _request_timeout = timeout
        if on_request is not None:
            on_request(request_verb(method, url), request_kind(url))
        return send(method, url, *args, _request_timeout=_request_timeout, **kwargs)

    api.rest_client.request = request  # type: ignore[method-assign]
    return api


def api_client(
    kubeconfig: str | None = None,
    context: str | None = None,
    timeout: tuple[float, float] = DEFAULT_REQUEST_TIMEOUT,
    on_request: OnRequest | None = None,
    connections: int | None = None,
) -> client.ApiClient:
    """An API client for ``kubeconfig`` (or ``$KUBECONFIG``, or ``~/.kube/config``), else in-cluster config.

    Requests without a timeout of their own get ``timeout``; ``on_request`` (if given) is told the verb
    and kind of every request, so the caller can count them in one place. ``connections``: how many
    connections the client keeps open for reuse, at least as many as the threads that send requests at
    once (the client's default is 5 per CPU: a busier caller's surplus connections are closed after each
    request, and every new one costs a TLS handshake on both sides). Called at an entry point only;
    nothing reads configuration at import time.
    """
    path = kubeconfig or os.environ.get("KUBECONFIG")
    default = os.path.expanduser("~/.kube/config")
    cfg = client.Configuration()
    if path or os.path.exists(default):
        config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=path or default, context=context, client_configuration=cfg
        )
    else:
        config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
    if connections is not None:
        cfg.connection_pool_maxsize = max(cfg.connection_pool_maxsize, connections)
    return _wrap_requests(client.ApiClient(cfg), timeout, on_request)
