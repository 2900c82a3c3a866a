"""Peers before main: wait until a replica's own and every lower rank's FQDN resolve (no heavy import).

DI-engine's mesh has rank r listen on its own FQDN and dial every lower rank's; a name that does
not resolve yet raises inside DI-engine's listener thread and leaves the process silently deaf. On
a cluster a pod's DNS record appears only once the pod has an address, so every replica's pod gets
an init container running ``dihera wait-peers`` (docs/rendering.md), which calls
:func:`wait_for_names` with :func:`resolve_with_dns`. Resolution and the clock are passed in, so
the logic is tested without DNS. This module imports only the standard library: the init
container starts in a fraction of a second.
"""

from __future__ import annotations

import ipaddress
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = [
    "Peer",
    "WaitOutcome",
    "parse_nodes",
    "parse_timeout",
    "peers_to_wait_for",
    "resolve_with_dns",
    "wait_for_names",
]


@dataclass(frozen=True)
class Peer:
    """A ``DI_NODES`` entry whose name must resolve: its rank and host name."""

    rank: int
    host: str

    def __str__(self) -> str:
        return f"rank {self.rank} {self.host}"


@dataclass(frozen=True)
class WaitOutcome:
    """After a round of resolution: the names that still fail (with the resolver's error) and the seconds waited."""

    unresolved: tuple[tuple[Peer, str], ...]
    waited: float

    @property
    def ok(self) -> bool:
        return not self.unresolved

    def describe_unresolved(self) -> str:
        return ", ".join(f"{peer} ({error})" for peer, error in self.unresolved)


def parse_nodes(value: str) -> list[str]:
    """``DI_NODES`` as a list, position = rank."""
    return [entry.strip() for entry in value.split(",")] if value.strip() else []


def parse_timeout(value: str) -> int:
    """Whole seconds >= 0 from text (an annotation, a flag); ValueError saying what would be valid."""
    text = value.strip()
    if not text.isdigit():
        raise ValueError(f"{value!r} is not a whole number of seconds >= 0 (0 turns the wait off)")
    return int(text)


def _needs_dns(host: str) -> bool:
    """An IP literal (a vacant rank's 127.0.0.1) or an empty entry has nothing to wait for."""
    if not host:
        return False
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return True
    return False


def peers_to_wait_for(rank: int, nodes: Sequence[str]) -> list[Peer]:
    """Rank ``rank``'s own entry and every lower rank's, in rank order, that need DNS.

    ValueError naming the rank and the node count when ``rank`` is not a position of ``nodes``.
    """
    if not 0 <= rank < len(nodes):
        valid = f"0..{len(nodes) - 1}" if nodes else "none: DI_NODES is empty"
        raise ValueError(f"rank {rank} is not a position of DI_NODES ({len(nodes)} entries; valid ranks: {valid})")
    return [Peer(r, host) for r, host in enumerate(nodes[: rank + 1]) if _needs_dns(host)]


def resolve_with_dns(host: str) -> None:
    """Resolve ``host`` as DI-engine will (the system resolver); OSError when it does not resolve."""
    socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)


def _error_text(err: Exception) -> str:
    return getattr(err, "strerror", None) or str(err) or type(err).__name__


def wait_for_names(
    peers: Sequence[Peer],
    resolve: Callable[[str], object],
    timeout: float,
    interval: float = 0.5,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], object] = time.sleep,
    on_round: Callable[[WaitOutcome], object] | None = None,
) -> WaitOutcome:
    """Resolve ``peers`` until all do or ``timeout`` seconds pass; returns at once when they already do.

    Each round resolves the names still failing; ``on_round`` sees every unsuccessful round that
    will be followed by another (for progress lines). The outcome lists what still fails.
    """
    start = clock()
    pending = list(peers)
    while True:
        errors: list[tuple[Peer, str]] = []
        for peer in pending:
            try:
                resolve(peer.host)
            except (OSError, UnicodeError) as err:  # gaierror is an OSError; a bad label a UnicodeError
                errors.append((peer, _error_text(err)))
        outcome = WaitOutcome(tuple(errors), clock() - start)
        if outcome.ok or outcome.waited >= timeout:
            return outcome
        if on_round is not None:
            on_round(outcome)
        pending = [peer for peer, _ in errors]
        sleep(min(interval, timeout - outcome.waited))
