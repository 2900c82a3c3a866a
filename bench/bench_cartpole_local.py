"""CartPole DQN as plain local processes, started the way `ditask --platform k8s` runs in a DIJob's pods.

    <venv with DI-engine>/bin/python bench/bench_cartpole_local.py [--timeout 600] [--absent RANK] [--package DIR]

Four processes (rank 0 learner, 1 evaluator, 2 and 3 collectors), each with DI_RANK and DI_NODES,
`--topology mesh --labels <role> --ports <port>`, its own loopback address (127.0.0.2..5, the entries
of DI_NODES, the same port on each, like one port per pod) and its own writable working directory.
Prints the seconds from start to all replicas connected (every `dihera-connected` line), to the first
learner iteration (`dihera-progress`) and to the stop value (`dihera-stop-value-reached`), and to every
process exited, then each process's exit code. Asserts nothing; the DIJob run on the cluster is
measured against these figures.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

EXAMPLE_DIR = Path(__file__).resolve().parent.parent / "examples" / "cartpole"
MAIN = "cartpole_dqn.main.main"
ROLES = ("learner", "evaluator", "collector", "collector")
ADDRESSES = tuple(f"127.0.0.{2 + rank}" for rank in range(len(ROLES)))


@dataclass
class Replica:
    rank: int
    role: str
    proc: subprocess.Popen[bytes]
    log: Path
    exit_code: int | None = None
    exited_at: float | None = None
    seen: dict[str, float] = field(default_factory=dict)


def free_port() -> int:
    """A port free on every replica's address (each process listens on its own address)."""
    while True:
        with socket.socket() as probe:
            probe.bind((ADDRESSES[0], 0))
            port = int(probe.getsockname()[1])
        if all(_bindable(address, port) for address in ADDRESSES[1:]):
            return port


def _bindable(address: str, port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind((address, port))
        except OSError:
            return False
    return True


def start(rank: int, port: int, workdir: Path, ditask: str, package: Path) -> Replica:
    role = ROLES[rank]
    env = {
        **os.environ,
        "DI_RANK": str(rank),
        "DI_NODES": ",".join(ADDRESSES),
        "OMP_NUM_THREADS": "1",
        "PYTHONUNBUFFERED": "1",
    }
    cwd = workdir / f"rank-{rank}"
    cwd.mkdir(parents=True)
    log = workdir / f"rank-{rank}-{role}.log"
    command = [
        ditask,
        "--platform",
        "k8s",
        "--topology",
        "mesh",
        "--labels",
        role,
        "--package",
        str(package),
        "--main",
        MAIN,
        "--ports",
        str(port),
    ]
    with log.open("wb") as out:
        proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
    return Replica(rank, role, proc, log)


def scan(replica: Replica, now: float) -> None:
    """Record the first time each contract line appears in the replica's log."""
    for text in replica.log.read_text(errors="replace").splitlines():
        if text.startswith("dihera-"):
            replica.seen.setdefault(text.split(" ", 1)[0], now)
        if text.startswith("dihera-collect ") and " model_iter=0 " not in text:
            replica.seen.setdefault("learner-model", now)  # collecting with a model sent by the learner


def run(timeout: float, workdir: Path, ditask: str, absent: set[int], package: Path) -> tuple[list[Replica], int]:
    port = free_port()
    started = time.monotonic()
    replicas = [start(rank, port, workdir, ditask, package) for rank in range(len(ROLES)) if rank not in absent]
    while time.monotonic() - started < timeout:
        now = time.monotonic() - started
        for replica in replicas:
            scan(replica, now)
            if replica.exit_code is None:
                replica.exit_code = replica.proc.poll()
                replica.exited_at = now if replica.exit_code is not None else None
        if all(r.exit_code is not None for r in replicas):
            break
        if any(r.exit_code not in (None, 0) for r in replicas):
            break  # a replica failed: the others would wait for it; stop them, like a gang restart
        time.sleep(0.5)
    for replica in replicas:
        if replica.proc.poll() is None:
            replica.proc.kill()
            replica.proc.wait()
            replica.exit_code = None  # printed as killed
    return replicas, port


def first(replicas: list[Replica], key: str, every: bool = False) -> str:
    times = [r.seen[key] for r in replicas if key in r.seen]
    if not times or (every and len(times) < len(replicas)):
        return "not reached"
    return f"{max(times) if every else min(times):.1f} s"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--timeout", type=float, default=600.0, help="kill the processes after this (s)")
    parser.add_argument(
        "--absent",
        type=int,
        action="append",
        default=[],
        help="do not start this rank (its DI_NODES entry stays): the others' barrier times out",
    )
    parser.add_argument("--ditask", default=str(Path(sys.executable).parent / "ditask"))
    parser.add_argument("--package", type=Path, default=EXAMPLE_DIR, help="the folder holding cartpole_dqn")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="dihera-cartpole-"))
    replicas, port = run(args.timeout, workdir, args.ditask, set(args.absent), args.package)
    print(f"cartpole DQN, {len(replicas)} local processes, mesh on port {port}, logs in {workdir}")
    print(f"  all connected          {first(replicas, 'dihera-connected', every=True)}")
    if any("dihera-barrier-timeout" in r.seen for r in replicas):
        print(f"  barrier timed out      {first(replicas, 'dihera-barrier-timeout', every=True)}")
    print(f"  first learner iter     {first(replicas, 'dihera-progress')}")
    print(f"  stop value reached     {first(replicas, 'dihera-stop-value-reached')}")
    print(
        f"  collectors with model  {sum('learner-model' in r.seen for r in replicas if r.role == 'collector')}"
        f" of {sum(r.role == 'collector' for r in replicas)} (first after {first(replicas, 'learner-model')})"
    )
    ended = [r.exited_at for r in replicas if r.exited_at is not None]
    print(f"  all exited             {f'{max(ended):.1f} s' if len(ended) == len(replicas) else 'no'}")
    for r in replicas:
        code = "killed at timeout" if r.exit_code is None else str(r.exit_code)
        print(f"  rank {r.rank} {r.role:<9} exit {code}")
    evaluators = [r for r in replicas if r.role == "evaluator"]
    reached = any("dihera-stop-value-reached" in r.seen for r in evaluators)
    ok = all(r.exit_code == 0 for r in replicas) and reached
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
