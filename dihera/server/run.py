"""Run the di-server with uvicorn: configure logging, build the API client and the backend, serve until stopped."""

from __future__ import annotations

import logging

import uvicorn

from dihera.kube import api_client
from dihera.logs import configure_logging
from dihera.server.app import create_app
from dihera.server.backend import KubeBackend
from dihera.server.settings import ServerSettings

__all__ = ["serve"]

log = logging.getLogger("dihera.server")


def serve(settings: ServerSettings) -> None:
    """Blocks until the server stops. Without auth, anyone who reaches the port may scale jobs."""
    configure_logging(getattr(logging, settings.log_level.upper()))
    logging.getLogger("uvicorn.access").setLevel(logging.DEBUG if settings.log_level == "debug" else logging.WARNING)
    if not settings.auth:
        log.warning("authentication is OFF: only for a local demo on a loopback address")
    backend = KubeBackend(api_client(settings.kubeconfig), settings).start()
    if settings.tls_cert_file is None:
        log.warning("serving plain HTTP: bearer tokens cross the network in clear text (asked with --plain-http)")
    where = f"{settings.scheme}://{settings.host}:{settings.port}"
    log.info("di-server watching %s; listening on %s", settings.scope(), where)
    try:
        # log_config=None: uvicorn's records go through the root logger (logfmt), not its own handlers.
        # The certificate is read once, at start: a renewed one (cert-manager) takes a restart of the pod.
        uvicorn.run(
            create_app(settings, backend), host=settings.host, port=settings.port, log_config=None,
            ssl_certfile=settings.tls_cert_file, ssl_keyfile=settings.tls_key_file,
        )  # fmt: skip
    finally:
        backend.stop()
