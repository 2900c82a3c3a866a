"""CartPole DQN as plain local processes, started the way `ditask --platform k8s` runs in a DIJob's pods.

    <venv with DI-engine>/bin/python bench/bench_cartpole_local.py [--collectors 2] [--timeout 600]
        [--kill-after ITER | --join-after ITER] [--rank R] [--restart-delay S] [--extra-params N]
        [--absent RANK] [--env KEY=VALUE] [--package DIR]

One process per replica (rank 0 learner, 1 evaluator, 2.. collectors), each with DI_RANK and DI_NODES,
`--topology mesh --labels <role> --ports <port>`, its own loopback address (127.0.0.2.., the entries of
DI_NODES, the same port on each, like one port per pod) and its own writable working directory.

Prints the seconds from start to the learner's socket listening (DI-engine's `NNG listen` line), to
its beacon (`dihera-learner-up`), to every collector's first batch let through (`dihera-learner-seen`),
to the first learner iteration (`dihera-progress`), to the stop value (`dihera-stop-value-reached`) and
to every process exited, then each process's exit code and the DI-engine wait timeouts (`Timeout when
waiting for new context/model`) logged after a collector's first `dihera-learner-seen`.
`--kill-after ITER --rank R` SIGKILLs rank R (default 0, the learner) at the learner's first progress
line at or past ITER and starts it again with the same DI_RANK/DI_NODES (a restart in place, fresh
working directory); `--join-after ITER --rank R` starts rank R (its DI_NODES entry was there from the
start) only then, like a scale-up's new replica. Either prints how long the new process took to listen,
and then to beacon, be seen by every collector and train (learner) or to send its first batch and
collect with a learner model (collector).
`--extra-params N` sets DIHERA_EXTRA_PARAMS and compares every collector's `dihera-model-received`
digest with the learner's `dihera-model` digest. Times are seen by polling the logs every 0.5 s.
Asserts nothing but its exit code (0: stop value reached, every process exited 0, digests equal); the
DIJob runs on the cluster are measured against these figures.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

EXAMPLE_DIR = Path(__file__).resolve().parent.parent / "examples" / "cartpole"
MAIN = "cartpole_dqn.main.main"
TIMEOUTS = {"context": "Timeout when waiting for new context", "model": "Timeout when waiting for new model"}


@dataclass
class Attempt:
    """One process of a replica (a restarted replica has several)."""

    rank: int
    role: str
    number: int
    proc: subprocess.Popen[bytes]
    log: Path
    started_at: float
    exit_code: int | None = None
    exited_at: float | None = None
    killed: bool = False
    seen: dict[str, float] = field(default_factory=dict)  # first time each key appeared
    lines: list[str] = field(default_factory=list)


@dataclass
class Cluster:
    roles: tuple[str, ...]
    addresses: tuple[str, ...]
    port: int
    workdir: Path
    ditask: str
    package: Path
    env: dict[str, str]
    started: float = field(default_factory=time.monotonic)
    attempts: list[Attempt] = field(default_factory=list)

    def now(self) -> float:
        return time.monotonic() - self.started

    def current(self) -> list[Attempt]:
        """The latest attempt of every replica started."""
        latest: dict[int, Attempt] = {}
        for attempt in self.attempts:
            latest[attempt.rank] = attempt
        return [latest[rank] for rank in sorted(latest)]


def free_port(addresses: tuple[str, ...]) -> int:
    """A port free on every replica's address (each process listens on its own address)."""
    while True:
        with socket.socket() as probe:
            probe.bind((addresses[0], 0))
            port = int(probe.getsockname()[1])
        if all(_bindable(address, port) for address in addresses[1:]):
            return port


def _bindable(address: str, port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind((address, port))
        except OSError:
            return False
    return True


def start(cluster: Cluster, rank: int) -> Attempt:
    role = cluster.roles[rank]
    number = 1 + sum(a.rank == rank for a in cluster.attempts)
    env = {
        **os.environ,
        **cluster.env,
        "DI_RANK": str(rank),
        "DI_NODES": ",".join(cluster.addresses),
        "OMP_NUM_THREADS": "1",
        "PYTHONUNBUFFERED": "1",
        # the example imports dihera_figures (the image has it on PYTHONPATH)
        "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "examples" / "figures"),
    }
    suffix = "" if number == 1 else f".{number}"
    cwd = cluster.workdir / f"rank-{rank}{suffix}"  # a restarted pod gets a fresh emptyDir
    cwd.mkdir(parents=True)
    log = cluster.workdir / f"rank-{rank}-{role}{suffix}.log"
    command = [cluster.ditask, "--platform", "k8s", "--topology", "mesh", "--labels", role]
    command += ["--package", str(cluster.package), "--main", MAIN, "--ports", str(cluster.port)]
    with log.open("wb") as out:
        proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
    attempt = Attempt(rank, role, number, proc, log, cluster.now())
    cluster.attempts.append(attempt)
    return attempt


def fields(line: str) -> dict[str, str]:
    return dict(pair.split("=", 1) for pair in line.split(" ")[1:] if "=" in pair)


def scan(attempt: Attempt, now: float) -> None:
    """Record the first time each contract line (and each learner incarnation a collector saw) appears."""
    attempt.lines = attempt.log.read_text(errors="replace").splitlines()
    for text in attempt.lines:
        if "NNG listen on " in text:
            attempt.seen.setdefault("listen", now)  # DI-engine's socket is up (before main runs)
        if not text.startswith("dihera-"):
            continue
        key = text.split(" ", 1)[0]
        attempt.seen.setdefault(key, now)
        if key == "dihera-learner-seen":
            attempt.seen.setdefault(f"seen:{fields(text)['incarnation']}", now)
        if key == "dihera-collect" and " model_iter=0 " not in text:
            attempt.seen.setdefault("learner-model", now)  # collecting with a model sent by the learner


def poll(cluster: Cluster) -> None:
    now = cluster.now()
    for attempt in cluster.attempts:
        scan(attempt, now)
        if attempt.exit_code is None:
            attempt.exit_code = attempt.proc.poll()
            attempt.exited_at = now if attempt.exit_code is not None else None


def last_progress(attempt: Attempt) -> int:
    iters = [int(fields(t)["iter"]) for t in attempt.lines if t.startswith("dihera-progress ")]
    return iters[-1] if iters else -1


@dataclass
class Event:
    """Something the bench does to one rank once the learner's progress passes `after_iter`: `kill`
    (SIGKILL, then start it again `delay` s later, same DI_RANK/DI_NODES) or `join` (start a rank left
    out so far, like a scale-up's new replica)."""

    kind: str
    rank: int
    after_iter: int
    delay: float = 0.0
    at: float | None = None
    at_iter: int | None = None
    started_at: float | None = None


def learner_iter(cluster: Cluster) -> int:
    learners = [a for a in cluster.current() if a.role == "learner"]
    return last_progress(learners[0]) if learners else -1


def act(cluster: Cluster, event: Event | None) -> None:
    if event is None or event.started_at is not None:
        return
    if event.at is None and learner_iter(cluster) >= event.after_iter:
        event.at, event.at_iter = cluster.now(), learner_iter(cluster)
        if event.kind == "kill":
            victim = next(a for a in cluster.current() if a.rank == event.rank)
            victim.killed = True
            victim.proc.send_signal(signal.SIGKILL)
            victim.proc.wait()
    if event.at is not None and cluster.now() >= event.at + event.delay:
        start(cluster, event.rank)
        event.started_at = cluster.now()


def run(cluster: Cluster, timeout: float, absent: set[int], event: Event | None) -> None:
    for rank in range(len(cluster.roles)):
        if rank not in absent:
            start(cluster, rank)
    while cluster.now() < timeout:
        poll(cluster)
        act(cluster, event)
        current = cluster.current()
        pending = event is not None and event.at is not None and event.started_at is None
        if all(a.exit_code is not None for a in current) and not pending:
            break
        if any(a.exit_code not in (None, 0) and not a.killed for a in current):
            break  # a replica failed: the others would wait for it; stop them, like a gang restart
        time.sleep(0.5)
    for attempt in cluster.attempts:
        if attempt.proc.poll() is None:
            attempt.proc.kill()
            attempt.proc.wait()
            attempt.exit_code = None  # printed as killed at timeout


def first(attempts: list[Attempt], key: str, every: bool = False) -> float | None:
    times = [a.seen[key] for a in attempts if key in a.seen]
    if not times or (every and len(times) < len(attempts)):
        return None
    return max(times) if every else min(times)


def show(value: float | None, since: float | None = None) -> str:
    if value is None:
        return "not reached"
    return f"{value:.1f} s" + (f" (+{value - since:.1f} s)" if since is not None else "")


def timeouts_after_seen(attempt: Attempt) -> dict[str, int]:
    """DI-engine's wait timeouts logged after the attempt's first dihera-learner-seen line."""
    marks = [i for i, t in enumerate(attempt.lines) if t.startswith("dihera-learner-seen ")]
    tail = attempt.lines[marks[0] :] if marks else []
    return {kind: sum(text in t for t in tail) for kind, text in TIMEOUTS.items()}


def report_event(cluster: Cluster, event: Event) -> None:
    role = cluster.roles[event.rank]
    if event.at is None:
        print(f"  the learner never reached iter {event.after_iter}: rank {event.rank} not {event.kind}ed")
        return
    what = "SIGKILLed" if event.kind == "kill" else "left out"
    print(
        f"  rank {event.rank} {role} {what} until the learner's iter {event.at_iter} ({show(event.at)});"
        f" started at {show(event.started_at)}"
    )
    new = cluster.current()[[a.rank for a in cluster.current()].index(event.rank)]
    since = event.started_at
    print(f"    it listens            {show(new.seen.get('listen'), since)}")
    if role == "learner":
        up = [t for t in new.lines if t.startswith("dihera-learner-up ")]
        incarnation = fields(up[0])["incarnation"] if up else "?"
        collectors = [a for a in cluster.current() if a.role == "collector"]
        print(f"    its beacon            {show(new.seen.get('dihera-learner-up'), since)}")
        print(f"    every collector saw it {show(first(collectors, f'seen:{incarnation}', every=True), since)}")
        print(f"    its 1st iteration     {show(new.seen.get('dihera-progress'), since)}")
    elif role == "collector":
        print(f"    its first batch sent  {show(new.seen.get('dihera-learner-seen'), since)}")
        print(f"    collects with a learner model {show(new.seen.get('learner-model'), since)}")


def report_digests(cluster: Cluster) -> bool:
    """Print the learner's and every collector's digest of the extra weight; True when all equal."""
    digests: dict[str, str] = {}
    for attempt in cluster.current():
        for text in attempt.lines:
            if text.startswith(("dihera-model ", "dihera-model-received ")):
                digests[f"rank {attempt.rank} {attempt.role}"] = fields(text)["digest"]
                if attempt.role == "learner":
                    print(f"  learner's model         {text}")
    learner = next((d for name, d in digests.items() if name.endswith("learner")), None)
    collectors = [a for a in cluster.current() if a.role == "collector"]
    equal = [f"rank {a.rank}" for a in collectors if digests.get(f"rank {a.rank} collector") == learner]
    print(f"  collectors' digests = learner's ({learner}): {len(equal)} of {len(collectors)} {digests}")
    return learner is not None and len(equal) == len(collectors)


def report(cluster: Cluster, event: Event | None, extra: bool) -> int:
    current = cluster.current()
    collectors = [a for a in current if a.role == "collector"]
    print(
        f"cartpole DQN, {len(current)} local processes ({len(collectors)} collectors), mesh on port {cluster.port},"
        f" logs in {cluster.workdir}"
    )
    learners = [a for a in cluster.attempts if a.role == "learner"]
    listening = first(learners[:1], "listen")
    print(f"  learner listening       {show(listening)}")
    print(f"  learner up (beacon)     {show(first(learners[:1], 'dihera-learner-up'), listening)}")
    print(f"  every collector sent    {show(first(collectors, 'dihera-learner-seen', every=True))}")
    print(f"  first learner iter      {show(first(learners[:1], 'dihera-progress'))}")
    reached = [t for a in current for t in a.lines if t.startswith("dihera-stop-value-reached ")]
    at_iter = f" (iter {fields(reached[0])['iter']})" if reached else ""
    print(f"  stop value reached      {show(first(current, 'dihera-stop-value-reached'))}{at_iter}")
    with_model = sum("learner-model" in a.seen for a in collectors)
    first_model = show(first(collectors, "learner-model"))
    print(f"  collectors with model   {with_model} of {len(collectors)} (first after {first_model})")
    ended = [a.exited_at for a in current if a.exited_at is not None]
    print(f"  all exited              {show(max(ended)) if len(ended) == len(current) else 'no'}")
    if event is not None:
        report_event(cluster, event)
    digests_ok = report_digests(cluster) if extra else True
    waits = {f"rank {a.rank}": timeouts_after_seen(a) for a in collectors}
    print(f"  DI-engine timeouts after a collector's first learner-seen: {waits}")
    for a in cluster.attempts:
        code = "killed at timeout" if a.exit_code is None else str(a.exit_code)
        note = " (SIGKILLed by the bench)" if a.killed else ""
        print(f"  rank {a.rank} {a.role:<9} attempt {a.number} exit {code}{note}")
    ok = all(a.exit_code == 0 for a in current) and bool(reached) and digests_ok
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--collectors", type=int, default=2, help="collector replicas (ranks 2..)")
    parser.add_argument("--timeout", type=float, default=600.0, help="kill the processes after this (s)")
    parser.add_argument("--absent", type=int, action="append", default=[], help="do not start this rank")
    parser.add_argument("--kill-after", type=int, default=0, help="SIGKILL --rank at this learner iter, restart it")
    parser.add_argument("--join-after", type=int, default=0, help="start --rank (left out) at this learner iter")
    parser.add_argument("--rank", type=int, default=0, help="the rank --kill-after / --join-after act on")
    parser.add_argument("--restart-delay", type=float, default=1.0, help="seconds from the kill to the restart")
    parser.add_argument("--extra-params", type=int, default=0, help="DIHERA_EXTRA_PARAMS for every process")
    parser.add_argument("--env", action="append", default=[], help="KEY=VALUE for every process")
    parser.add_argument("--ditask", default=str(Path(sys.executable).parent / "ditask"))
    parser.add_argument("--package", type=Path, default=EXAMPLE_DIR, help="the folder holding cartpole_dqn")
    args = parser.parse_args()
    roles = ("learner", "evaluator", *(["collector"] * args.collectors))
    addresses = tuple(f"127.0.0.{2 + rank}" for rank in range(len(roles)))
    env = dict(item.split("=", 1) for item in args.env)
    if args.extra_params:
        env["DIHERA_EXTRA_PARAMS"] = str(args.extra_params)
    workdir = Path(tempfile.mkdtemp(prefix="dihera-cartpole-"))
    cluster = Cluster(roles, addresses, free_port(addresses), workdir, args.ditask, args.package, env)
    event = None
    if args.kill_after > 0:
        event = Event("kill", args.rank, args.kill_after, args.restart_delay)
    elif args.join_after > 0:
        event = Event("join", args.rank, args.join_after)
    absent = set(args.absent) | ({args.rank} if event and event.kind == "join" else set())
    run(cluster, args.timeout, absent, event)
    return report(cluster, event, bool(args.extra_params))


if __name__ == "__main__":
    sys.exit(main())
