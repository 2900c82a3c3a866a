"""Prometheus metrics of one di-server app (its own registry: two apps in one process do not clash)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

from fastapi import Request, Response
from prometheus_client import CollectorRegistry, Counter, Histogram

__all__ = ["ServerMetrics"]


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

    async def middleware(self, request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        started = time.perf_counter()
        code = 500
        try:
            response = await call_next(request)
            code = response.status_code
            return response
        finally:
            route = getattr(request.scope.get("route"), "path", "unmatched")
            self.requests.labels(request.method, route, str(code)).inc()
            self.latency.labels(request.method, route).observe(time.perf_counter() - started)
