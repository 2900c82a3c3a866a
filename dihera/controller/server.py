"""HTTP endpoints besides kopf's liveness probe: ``/metrics`` (Prometheus) and ``/readyz``."""

from __future__ import annotations

import threading

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from dihera.controller.metrics import Metrics

__all__ = ["Readiness", "start_endpoints"]


class Readiness:
    """Ready once the operator has started its watches (set from kopf's startup handler)."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def set(self) -> None:
        self._event.set()

    def clear(self) -> None:
        self._event.clear()

    @property
    def ready(self) -> bool:
        return self._event.is_set()


async def start_endpoints(host: str, port: int, metrics: Metrics, readiness: Readiness) -> web.AppRunner:
    """Serve the endpoints on the running event loop; the caller cleans the runner up."""

    async def metrics_view(request: web.Request) -> web.Response:
        del request
        body = generate_latest(metrics.registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def ready_view(request: web.Request) -> web.Response:
        del request
        if readiness.ready:
            return web.Response(text="ok\n")
        return web.Response(status=503, text="starting\n")

    app = web.Application()
    app.router.add_get("/metrics", metrics_view)
    app.router.add_get("/readyz", ready_view)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    return runner
