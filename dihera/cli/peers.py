"""``dihera wait-peers``: the init container of every replica (peers before main, docs/rendering.md).

Reads ``DI_RANK`` and ``DI_NODES`` (dihera gives them to init containers), waits until the
replica's own FQDN and every lower rank's resolve, and exits 0; after ``--timeout`` seconds it
exits 1 naming every host that still does not resolve, so the pod fails visibly instead of
DI-engine hanging. Imports only the standard library and :mod:`dihera.peers`.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

__all__ = ["EXIT_BAD_INPUT", "EXIT_TIMED_OUT", "PROGRESS_EVERY", "add_peer_wait_flags", "register"]

EXIT_TIMED_OUT = 1
EXIT_BAD_INPUT = 2
#: Seconds between two "still waiting" lines.
PROGRESS_EVERY = 10.0


def _inputs(args: argparse.Namespace) -> tuple[int, list[str]]:
    """The rank and DI_NODES from the flags, else the environment; ValueError naming the bad one."""
    from dihera.peers import parse_nodes

    rank_text = args.rank if args.rank is not None else os.environ.get("DI_RANK", "")
    nodes_text = args.nodes if args.nodes is not None else os.environ.get("DI_NODES", "")
    if not rank_text.strip().isdigit():
        raise ValueError(f"DI_RANK (--rank) {rank_text!r} is not a rank: a whole number >= 0")
    if not nodes_text.strip():
        raise ValueError("DI_NODES (--nodes) is empty: expected the job's FQDNs, comma-joined in rank order")
    return int(rank_text), parse_nodes(nodes_text)


def _cmd_wait_peers(args: argparse.Namespace) -> int:
    from dihera.peers import WaitOutcome, peers_to_wait_for, resolve_with_dns, wait_for_names

    prefix = "dihera wait-peers:"
    try:
        rank, nodes = _inputs(args)
        peers = peers_to_wait_for(rank, nodes)
    except ValueError as err:
        print(f"{prefix} {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    next_line = [0.0]

    def progress(outcome: WaitOutcome) -> None:
        if outcome.waited >= next_line[0]:
            next_line[0] = outcome.waited + PROGRESS_EVERY
            print(
                f"{prefix} rank {rank} waits (up to {args.timeout} s, {outcome.waited:.0f} s so far) for "
                f"{len(outcome.unresolved)} of {len(peers)} names: {outcome.describe_unresolved()}",
                flush=True,
            )

    outcome = wait_for_names(
        peers, resolve_with_dns, args.timeout, args.interval, clock=time.monotonic, sleep=time.sleep, on_round=progress
    )
    if outcome.ok:
        print(f"{prefix} rank {rank}: its own and every lower rank's name resolve ({outcome.waited:.1f} s)")
        return 0
    print(
        f"{prefix} rank {rank}: after {outcome.waited:.0f} s, {len(outcome.unresolved)} name(s) still do not "
        f"resolve: {outcome.describe_unresolved()}. The replica's containers were not started: are those "
        "replicas' pods scheduled and given an address? (The DIJob annotation diengine/peer-wait-timeout "
        "sets this bound; 0 turns the wait off.)",
        file=sys.stderr,
    )
    return EXIT_TIMED_OUT


def _seconds(text: str) -> int:
    from dihera.peers import parse_timeout

    try:
        return parse_timeout(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from err


def add_peer_wait_flags(p: argparse.ArgumentParser) -> None:
    """``--peer-wait-image`` and ``--peer-wait-timeout`` (the init container every replica gets)."""
    from dihera.constants import DEFAULT_IMAGE, DEFAULT_PEER_WAIT_TIMEOUT

    p.add_argument(
        "--peer-wait-image",
        help=f"image running `dihera wait-peers` in every replica's init container (default {DEFAULT_IMAGE})",
    )
    p.add_argument(
        "--peer-wait-timeout",
        type=_seconds,
        metavar="SECONDS",
        help=f"how long a replica waits for its peers' names (default {DEFAULT_PEER_WAIT_TIMEOUT}; 0: no wait)",
    )


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``wait-peers`` to the ``dihera`` command."""
    from dihera.constants import DEFAULT_PEER_WAIT_TIMEOUT

    p = sub.add_parser(
        "wait-peers",
        help="wait until this replica's own and every lower rank's FQDN resolve (every replica's init container)",
    )
    p.add_argument(
        "--timeout",
        type=_seconds,
        default=DEFAULT_PEER_WAIT_TIMEOUT,
        metavar="SECONDS",
        help=f"give up (exit 1) after this long (default {DEFAULT_PEER_WAIT_TIMEOUT})",
    )
    p.add_argument("--interval", type=float, default=0.5, metavar="SECONDS", help="between two rounds (default 0.5)")
    p.add_argument("--rank", help="this replica's rank (default: $DI_RANK)")
    p.add_argument("--nodes", help="every rank's address, comma-joined in rank order (default: $DI_NODES)")
    p.set_defaults(func=_cmd_wait_peers)
