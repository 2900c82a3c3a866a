"""The di-server app under a real uvicorn on 127.0.0.1 (an ephemeral port), and a client that sends a request's
body as an attacker would: streamed, while it reads the answer.

- :func:`served`: uvicorn in a thread of this process (the backend's calls can be counted);
- :func:`served_apart`: uvicorn in a child process (``python -m tests.unit.live_server FD``: its memory is its
  own, read from /proc/<pid>/status), the listening socket bound here and handed over, so no port races;
- :func:`send_streamed`: one request over a raw socket, the body sent from a generator in a thread.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import uvicorn
from fastapi import FastAPI

from dihera.kube.auth import Identity
from dihera.server import ServerSettings, create_app
from tests.builders import job, task
from tests.unit.fake_backend import FakeBackend

__all__ = ["Answer", "CountingBackend", "memory_kib", "send_streamed", "served", "served_apart", "standard_backend"]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class CountingBackend(FakeBackend):
    """The fake backend counting its TokenReviews."""

    def __init__(self) -> None:
        super().__init__()
        self.token_reviews = 0

    def authenticate(self, token: str) -> Identity | None:
        self.token_reviews += 1
        return super().authenticate(token)


def standard_backend() -> CountingBackend:
    """team-a/dqn (a learner, 2 collectors, maxReplicas 6), as the unit tests' ``backend`` fixture holds."""
    b = CountingBackend()
    b.add(job(task("learner"), task("collector", replicas=2), name="dqn", maxReplicas=6))
    return b


def _listening() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    return sock


@contextlib.contextmanager
def served(app: FastAPI) -> Iterator[int]:
    """``app`` under uvicorn in a thread; yields its port."""
    sock = _listening()
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started, "uvicorn did not start"
    try:
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


@contextlib.contextmanager
def served_apart(*flags: str) -> Iterator[tuple[int, int]]:
    """The app over :func:`standard_backend` under uvicorn in a child process; yields its port and pid.
    ``flags``: ``--no-gate`` serves it without the body gate (to measure what the gate saves)."""
    sock = _listening()
    port = sock.getsockname()[1]
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.unit.live_server", str(sock.fileno()), *flags],
        pass_fds=[sock.fileno()], cwd=ROOT,
    )  # fmt: skip
    sock.close()
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1) as probe:
                probe.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
                if probe.recv(64).startswith(b"HTTP/1.1 200"):
                    break
            time.sleep(0.05)
        else:
            raise AssertionError("the di-server's child process did not answer /healthz")
        yield port, child.pid
    finally:
        child.terminate()
        child.wait(10)


def memory_kib(pid: int) -> dict[str, int]:
    """``VmRSS`` (now) and ``VmHWM`` (the peak) of process ``pid``, in KiB."""
    with open(f"/proc/{pid}/status") as status:
        fields = dict(line.split(":", 1) for line in status)
    return {k: int(fields[k].split()[0]) for k in ("VmRSS", "VmHWM")}


@dataclass(frozen=True)
class Answer:
    status: int
    head: str
    body: bytes
    #: bytes of the body (with its chunks' framing) the socket took before the server closed it (or all of them)
    sent: int


def _send(sock: socket.socket, chunks: Iterable[bytes], chunked: bool, sent: list[int]) -> None:
    try:
        for chunk in chunks:
            data = memoryview(b"%x\r\n%s\r\n" % (len(chunk), chunk) if chunked else chunk)
            while data:
                n = sock.send(data)
                sent[0], data = sent[0] + n, data[n:]
        if chunked:
            sock.sendall(b"0\r\n\r\n")
    except OSError:  # the server answered and closed the connection: the rest is never sent
        pass


def send_streamed(
    port: int, method: str, path: str, chunks: Iterable[bytes], headers: dict[str, str], chunked: bool
) -> Answer:
    """``method path`` with ``headers`` and the body from ``chunks`` (chunked, or as the ``Content-Length``
    header in ``headers`` says), sent by a thread while this one reads the answer (to its end: the server closes)."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", *(f"{k}: {v}" for k, v in headers.items())]
        if chunked:
            lines.append("Transfer-Encoding: chunked")
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        sent = [0]
        sender = threading.Thread(target=_send, args=(sock, chunks, chunked, sent), daemon=True)
        sender.start()
        received = b""
        with contextlib.suppress(OSError):
            while data := sock.recv(65536):
                received += data
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        sender.join(60)
    head, _, body = received.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1]) if head.startswith(b"HTTP/1.1 ") else 0
    return Answer(status, head.decode("latin-1"), body, sent[0])


def _main(argv: list[str]) -> None:
    """The child of :func:`served_apart`: serve on the inherited socket until terminated."""
    app = create_app(ServerSettings(), standard_backend())
    if "--no-gate" in argv:
        app.user_middleware = [m for m in app.user_middleware if m.cls.__name__ != "BodyGate"]
    sock = socket.socket(fileno=int(argv[0]))
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])


if __name__ == "__main__":
    _main(sys.argv[1:])
