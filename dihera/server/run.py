"""Run the di-server with uvicorn: build the API client and the backend, serve until stopped."""

from __future__ import annotations

import logging

import uvicorn

from dihera.kube import api_client
from dihera.server.app import create_app
from dihera.server.backend import KubeBackend
from dihera.server.settings import ServerSettings

__all__ = ["serve"]

log = logging.getLogger(__name__)


def serve(settings: ServerSettings) -> None:
    """Blocks until the server stops. Without auth, anyone who reaches the port may scale jobs."""
    if not settings.auth:
        log.warning("authentication is OFF: only for a local demo on a loopback address")
    backend = KubeBackend(api_client(settings.kubeconfig), settings).start()
    try:
        uvicorn.run(create_app(settings, backend), host=settings.host, port=settings.port, log_level=settings.log_level)
    finally:
        backend.stop()
