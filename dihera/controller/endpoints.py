"""The controller's HTTP endpoints: ``/metrics`` (Prometheus) and ``/readyz`` on the metrics port,
``/healthz`` (liveness) on the health port; each port a threaded HTTP server of the standard library.

``/readyz`` answers 200 once the controller has started (a replica waiting for the Lease is ready too:
it is a healthy standby); ``/healthz`` 200 while ``healthy()`` says so (the controller's threads are
alive), else 500, so the kubelet restarts a controller whose watches or leader election died.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from dihera.controller.metrics import Metrics

__all__ = ["Endpoints", "Readiness"]


class Readiness:
    """Ready once the controller has started."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def set(self) -> None:
        self._event.set()

    def clear(self) -> None:
        self._event.clear()

    @property
    def ready(self) -> bool:
        return self._event.is_set()


Route = Callable[[], tuple[int, str, bytes]]


def _handler(routes: dict[str, Route]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            route = routes.get(self.path.split("?", 1)[0])
            status, content_type, body = route() if route is not None else (404, "text/plain", b"not found\n")
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return  # probes every few seconds: no access log

    return Handler


class Endpoints:
    """``/metrics`` + ``/readyz`` on ``metrics_port`` and ``/healthz`` on ``health_port`` (0: not served;
    the same port serves all three)."""

    def __init__(
        self,
        host: str,
        metrics_port: int,
        health_port: int,
        metrics: Metrics,
        readiness: Readiness,
        healthy: Callable[[], bool] = lambda: True,
    ) -> None:
        def metrics_view() -> tuple[int, str, bytes]:
            return 200, CONTENT_TYPE_LATEST, generate_latest(metrics.registry)

        def ready_view() -> tuple[int, str, bytes]:
            return (200, "text/plain", b"ok\n") if readiness.ready else (503, "text/plain", b"starting\n")

        def health_view() -> tuple[int, str, bytes]:
            return (200, "text/plain", b"ok\n") if healthy() else (500, "text/plain", b"unhealthy\n")

        by_port: dict[int, dict[str, Route]] = {}
        if metrics_port:
            by_port.setdefault(metrics_port, {}).update({"/metrics": metrics_view, "/readyz": ready_view})
        if health_port:
            by_port.setdefault(health_port, {})["/healthz"] = health_view
        self._servers = [ThreadingHTTPServer((host, port), _handler(routes)) for port, routes in by_port.items()]
        for server in self._servers:
            server.daemon_threads = True

    @property
    def ports(self) -> list[int]:
        """The ports served."""
        return [int(server.server_address[1]) for server in self._servers]

    def start(self) -> Endpoints:
        for server in self._servers:
            threading.Thread(target=server.serve_forever, name="controller-endpoints", daemon=True).start()
        return self

    def stop(self) -> None:
        for server in self._servers:
            server.shutdown()
            server.server_close()
