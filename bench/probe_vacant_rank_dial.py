"""What a mesh replica's dial does with each shape of a vacant rank's DI_NODES entry (pynng, as ding dials).

    unshare -n sh -c 'ip link set lo up && <venv with DI-engine>/bin/python bench/probe_vacant_rank_dial.py'

Run it in a private network namespace (only loopback: no DNS query can leave the machine). DI-engine
0.5.3's NNG queue (ding/framework/message_queue/nng.py) opens a Bus0 socket, listens on its own
address, then calls `sock.dial(address)` for every lower rank with pynng's default `block=None`: a
blocking dial first, falling back to a non-blocking (redialling) one only on ConnectionRefused.
Any other error escapes into ding's listener thread, and the process then silently sends and receives
nothing. For each candidate entry this prints whether the dial raised, both as ding dials and
non-blocking, and whether the socket still carries messages from a live peer afterwards.
"""

from __future__ import annotations

import sys
import time

import pynng

PORT = 50515
LIVE = f"tcp://127.0.0.2:{PORT}"
CANDIDATES = {
    "empty entry (today)": f"tcp://:{PORT}",
    "unresolvable name": f"tcp://dihera-vacant.invalid:{PORT}",
    "loopback, nobody listening": f"tcp://127.0.0.1:{PORT}",
}


def dial(sock: pynng.Bus0, address: str, block: bool | None) -> str:
    try:
        if block is None:
            sock.dial(address)
        else:
            sock.dial(address, block=block)
    except pynng.NNGException as error:
        return f"raises {type(error).__name__}: {error}"
    return "ok"


def carries(sock: pynng.Bus0, live: pynng.Bus0) -> bool:
    """Whether a message from the live peer still arrives on the socket after the dial."""
    deadline = time.monotonic() + 3
    sock.recv_timeout = 200
    while time.monotonic() < deadline:
        live.send(b"ping")
        try:
            if sock.recv() == b"ping":
                return True
        except pynng.Timeout:
            continue
    return False


def main() -> int:
    print(f"pynng {pynng.__version__ if hasattr(pynng, '__version__') else '?'}; live peer on {LIVE}")
    with pynng.Bus0(listen=LIVE) as live:
        for label, address in CANDIDATES.items():
            for block, how in ((None, "as ding dials (block=None)"), (False, "non-blocking (block=False)")):
                with pynng.Bus0(listen=f"tcp://127.0.0.3:{PORT}") as sock:
                    sock.dial(LIVE)
                    outcome = dial(sock, address, block)
                    alive = carries(sock, live)
                    print(f"  {label:<28} {address:<40} {how:<28} -> {outcome}; still carries: {alive}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
