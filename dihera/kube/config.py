"""Build a Kubernetes API client: from a kubeconfig file, or in-cluster when none is given."""

from __future__ import annotations

import os

from kubernetes import client, config

__all__ = ["api_client"]


def api_client(kubeconfig: str | None = None, context: str | None = None) -> client.ApiClient:
    """An API client for ``kubeconfig`` (or ``$KUBECONFIG``, or ``~/.kube/config``), else in-cluster config.

    Called at an entry point only; nothing reads configuration at import time.
    """
    path = kubeconfig or os.environ.get("KUBECONFIG")
    default = os.path.expanduser("~/.kube/config")
    if path or os.path.exists(default):
        cfg = client.Configuration()
        config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=path or default, context=context, client_configuration=cfg
        )
        return client.ApiClient(cfg)
    cfg = client.Configuration()
    config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
    return client.ApiClient(cfg)
