"""kopf's credentials from the same API client the rest of dihera uses (one kubeconfig, one identity)."""

from __future__ import annotations

from typing import Any

import kopf
from kubernetes import client

__all__ = ["kopf_connection"]


def kopf_connection(api: client.ApiClient) -> Any:
    """A ``kopf.ConnectionInfo`` with the server, CA, client certificate or token of ``api``."""
    cfg: client.Configuration = api.configuration
    auth = (cfg.api_key or {}).get("authorization") or (cfg.api_key or {}).get("BearerToken")
    scheme, token = None, None
    if auth:
        parts = str(auth).split(" ", 1)
        scheme, token = (parts[0], parts[1]) if len(parts) == 2 else ("Bearer", parts[0])
    return kopf.ConnectionInfo(
        server=cfg.host,
        ca_path=cfg.ssl_ca_cert or None,
        insecure=not cfg.verify_ssl,
        scheme=scheme,
        token=token,
        certificate_path=cfg.cert_file or None,
        private_key_path=cfg.key_file or None,
    )
