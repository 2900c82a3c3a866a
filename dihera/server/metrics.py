"""Prometheus metrics of one di-server app (its own registry: two apps in one process do not clash)."""

from __future__ import annotations

import time

from prometheus_client import CollectorRegistry, Counter, Histogram
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["ObserveRequests", "ServerMetrics"]


class ServerMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "dihera_server_requests",
            "HTTP requests by route and code",
            ["method", "route", "code"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "dihera_server_request_seconds",
            "HTTP request latency",
            ["method", "route"],
            registry=self.registry,
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
        )
        self.scales = Counter(
            "dihera_server_scale_operations",
            "scale requests by action and outcome",
            ["action", "outcome"],
            registry=self.registry,
        )


class ObserveRequests:
    """ASGI middleware counting requests by route and code and timing them (no per-request task or copy)."""

    def __init__(self, app: ASGIApp, metrics: ServerMetrics) -> None:
        self.app, self.metrics = app, metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        code = 500

        async def observe_send(message: Message) -> None:
            nonlocal code
            if message["type"] == "http.response.start":
                code = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, observe_send)
        finally:
            route = getattr(scope.get("route"), "path", "unmatched")  # the router sets it on this scope
            self.metrics.requests.labels(scope["method"], route, str(code)).inc()
            self.metrics.latency.labels(scope["method"], route).observe(time.perf_counter() - started)
