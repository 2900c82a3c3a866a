"""Start, find and stop the dev cluster's background processes, each known by its pid file."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["alive", "log_tail", "names_path", "pid_of", "start", "stop", "strays"]


def _cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return raw.decode(errors="replace").split("\0")[:-1]


def _running(pid: int) -> bool:
    """True for a live process; reaps it if it is our own exited child (a zombie)."""
    with contextlib.suppress(ChildProcessError, OSError):
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def pid_of(pidfile: Path, binary: Path) -> int | None:
    """The pid in `pidfile` if that process is alive and runs `binary` (guards against pid reuse)."""
    try:
        pid = int(pidfile.read_text().strip())
    except (OSError, ValueError):
        return None
    argv = _cmdline(pid)
    if not argv or argv[0] != str(binary) or not _running(pid):
        return None
    return pid


def alive(pidfile: Path, binary: Path) -> bool:
    return pid_of(pidfile, binary) is not None


def start(
    argv: Sequence[str], pidfile: Path, logfile: Path, env: Mapping[str, str], cwd: Path, program: str | None = None
) -> int:
    """Start `argv` in its own session (it outlives the caller), output appended to `logfile`.

    `program`: the program `argv` ends up running when argv[0] is a launcher that execs it (nsenter).
    """
    with logfile.open("ab") as log:
        proc = subprocess.Popen(
            list(argv), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            env=dict(env), cwd=cwd, start_new_session=True,
        )  # fmt: skip
    pidfile.write_text(f"{proc.pid}\n")
    deadline = time.monotonic() + 5.0  # /proc/PID/cmdline is empty until the exec completes
    expected = program or argv[0]
    while _cmdline(proc.pid)[:1] != [expected] and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    return proc.pid


def stop(pid: int, grace: float = 10.0) -> None:
    """SIGTERM, then SIGKILL after `grace` seconds."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while _running(pid):
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            deadline = time.monotonic() + grace
        time.sleep(0.1)


def strays(state_root: Path, binaries: Sequence[Path]) -> list[int]:
    """Live processes running one of `binaries` with `state_root` in their arguments.

    Those are processes this tool started and lost track of (e.g. a deleted pid file).
    """
    root, programs = str(state_root), {str(b) for b in binaries}
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            pid = int(entry.name)
            argv = _cmdline(pid)
            if argv and argv[0] in programs and any(names_path(arg, root) for arg in argv[1:]) and _running(pid):
                found.append(pid)
    return found


def names_path(arg: str, root: str) -> bool:
    """Whether a program's argument names `root` or a path inside it: not merely a directory whose name
    starts the same (`.devcluster` and the compat pair's `.devcluster-v1.35.4_v3.7.18`, which run side by side)."""
    at = arg.find(root)
    while at != -1:
        end = at + len(root)
        if end == len(arg) or arg[end] in "/,: ":
            return True
        at = arg.find(root, at + 1)
    return False


def log_tail(logfile: Path, lines: int = 15) -> str:
    try:
        return "\n".join(logfile.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"
