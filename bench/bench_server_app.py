"""di-server request cost without a cluster or sockets: CPU time per request of the app itself.

    python bench/bench_server_app.py [--requests 2000] [--rounds 5]

The FastAPI app over the unit tests' in-memory backend (tests/unit/fake_backend.py: the real
routes, guard, views and scaling code; reviews answered from memory), called as an ASGI app in one
process. Each route is requested N times per round; the best round's CPU time (all threads, so a
threadpool hop is counted) per request is printed, with what one core would serve. CPU time, not wall
time: it hardly moves when other work shares the cores, so figures from a busy machine compare.
Baseline in the same run: ``GET /healthz`` (the HTTP stack, no auth, no job). Jobs: 1 learner + 2
collectors (the kind ``bench_server.py`` measures over HTTP) and 1 learner + 2,000 collectors with
a pod each. Asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import warnings
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")  # the tests' TestClient

from dihera.kube.snapshot import JobSnapshot  # noqa: E402
from dihera.naming import hostname  # noqa: E402
from dihera.server import ServerSettings, create_app  # noqa: E402
from tests.builders import PodBuilder, job, task  # noqa: E402
from tests.unit.fake_backend import ADMIN, FakeBackend  # noqa: E402

ROUTES = {
    "GET /healthz (baseline)": "/healthz",
    "GET v2 replicas, 3 replicas": "/v2alpha1/job/team-a.small/replicas",
    "GET v1 replicas, 3 replicas": "/v1/namespaces/team-a/dijobs/small/replicas",
    "GET v2 replicas, 2,001 replicas": "/v2alpha1/job/team-a.large/replicas",
    "GET v1 replicas, 2,001 replicas": "/v1/namespaces/team-a/dijobs/large/replicas",
}


class PodsBackend(FakeBackend):
    """The in-memory backend, with a Running pod for every replica of the large job (as the watch cache has)."""

    def __init__(self) -> None:
        super().__init__()
        self.pods: tuple[dict[str, Any], ...] = ()

    def job(self, namespace: str, name: str) -> JobSnapshot | None:
        found = super().job(namespace, name)
        return JobSnapshot(found.body, found.configmap, self.pods if name == "large" else ()) if found else None


def backend() -> PodsBackend:
    b = PodsBackend()
    b.add(job(task("learner"), task("collector", replicas=2), name="small"))
    b.add(job(task("learner"), task("collector", replicas=2000), name="large", maxReplicas=3000))
    hosts = [hostname("large", "learner", 0)] + [hostname("large", "collector", i) for i in range(2000)]
    b.pods = tuple(
        PodBuilder(f"{h}-1")
        .namespace("team-a")
        .job("large")
        .host(h)
        .created("2026-01-01T00:00:00Z")
        .phase("Running")
        .obj()
        for h in hosts
    )
    return b


async def call(app: Any, path: str, times: int) -> set[int]:
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"bench"), (b"authorization", f"Bearer {ADMIN}".encode())],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 2),
    }
    statuses: set[int] = set()

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            statuses.add(message["status"])

    for _ in range(times):
        await app(dict(scope), receive, send)
    return statuses


async def measure(app: Any, path: str, requests: int, rounds: int) -> float:
    """Best round's CPU seconds per request."""
    statuses = await call(app, path, min(requests, 20))  # warm: first-request costs, caches
    if statuses != {200}:
        raise RuntimeError(f"GET {path}: {statuses}")
    best = float("inf")
    for _ in range(rounds):
        started = time.process_time()
        await call(app, path, requests)
        best = min(best, (time.process_time() - started) / requests)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    app = create_app(ServerSettings(), backend())
    print(f"di-server app, CPU per request (best of {args.rounds} rounds of {args.requests}; in-process ASGI, auth on)")
    baseline = None
    for name, path in ROUTES.items():
        n = args.requests if "2,001" not in name else max(args.requests // 200, 3)  # before: seconds each
        seconds = asyncio.run(measure(app, path, n, args.rounds))
        baseline = baseline or seconds
        print(
            f"  {name:<33} {seconds * 1e6:8.0f} us  ({1 / seconds:8,.0f} req/s per core)  "
            f"ratio to healthz {seconds / baseline:.2f}"
        )


if __name__ == "__main__":
    main()
