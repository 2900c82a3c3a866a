"""A loopback TCP proxy in front of di-server replicas, standing in for their Service: the first connection
goes to one replica and loses its answer (the replica dies right after answering, before a byte of the
answer reaches the client), later connections go to the other one."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterator

__all__ = ["answer_losing_proxy"]


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := src.recv(65536):
            dst.sendall(data)
    with contextlib.suppress(OSError):
        dst.shutdown(socket.SHUT_WR)


def _relay(client: socket.socket, port: int) -> None:
    with client, socket.create_connection(("127.0.0.1", port)) as upstream:
        back = threading.Thread(target=_pipe, args=(upstream, client), daemon=True)
        back.start()
        _pipe(client, upstream)
        back.join(60)


def _lose_answer(client: socket.socket, port: int, die: Callable[[], None]) -> None:
    """Forward the request; when the answer starts coming back, call ``die`` and close the client's connection
    unanswered: to the client the request went out and no answer ever came."""
    with client, socket.create_connection(("127.0.0.1", port)) as upstream:
        forward = threading.Thread(target=_pipe, args=(client, upstream), daemon=True)
        forward.start()
        with contextlib.suppress(OSError):
            upstream.recv(1)  # the first byte of the answer: the replica has done the request
        die()
        with contextlib.suppress(OSError):  # shutdown, not only close: the forwarding thread still reads it
            client.shutdown(socket.SHUT_RDWR)
        forward.join(10)


@contextlib.contextmanager
def answer_losing_proxy(first: int, then: int, die: Callable[[], None]) -> Iterator[tuple[str, list[int]]]:
    """Listen on a free loopback port: the first connection to the replica on port ``first`` (its answer lost,
    ``die`` called), every later one to port ``then``. Yields the proxy's URL and the backend port of each
    connection so far."""
    listener = socket.create_server(("127.0.0.1", 0))
    routed: list[int] = []

    def serve() -> None:
        with contextlib.suppress(OSError):
            while True:
                client, _ = listener.accept()
                routed.append(first if not routed else then)
                if len(routed) == 1:
                    target = threading.Thread(target=_lose_answer, args=(client, first, die), daemon=True)
                else:
                    target = threading.Thread(target=_relay, args=(client, then), daemon=True)
                target.start()

    accepting = threading.Thread(target=serve, daemon=True)
    accepting.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}", routed
    finally:
        listener.close()
        accepting.join(5)
