"""CPU seconds used by each process of the local control plane, to say where a benchmark's time went.

:func:`cpu_seconds` reads ``/proc`` (user + system time of every process whose executable is one of
:data:`COMPONENTS` and whose arguments name the dev cluster's state directory, and of ``dihera
controller``); on another cluster it finds nothing and the benchmarks print no breakdown. The state
directory tells the default pair's processes from the compat pair's, whose cluster `make test` runs
beside it (the same kwok binary serves both). :func:`breakdown` is the difference of two readings, largest first.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # `ci` is a top-level folder of the repo, not an installed package
    sys.path.insert(0, str(REPO))

from ci.devcluster.processes import names_path  # noqa: E402
from ci.devcluster.settings import Settings  # noqa: E402

__all__ = ["COMPONENTS", "breakdown", "cpu_seconds"]

COMPONENTS = (
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kwok",
    "workflow-controller",
    "argo-server",
    "kubelet",
    "containerd",
)
_TICK = os.sysconf("SC_CLK_TCK")
_STATE_ROOT = str(Settings.from_environ().state_dir)


def _component(argv: list[str]) -> str | None:
    exe = Path(argv[0]).name if argv else ""
    if exe in COMPONENTS:
        return exe if any(names_path(arg, _STATE_ROOT) for arg in argv[1:]) else None
    if exe.startswith("python"):  # a console script runs as "python .../bin/dihera controller ..."
        argv = argv[1:]
    if argv[:1] and Path(argv[0]).name == "dihera" and argv[1:2] == ["controller"]:
        return "dihera-controller"
    return None


def cpu_seconds() -> dict[str, float]:
    """Component → CPU seconds used so far by its processes (children that exited not included)."""
    out: dict[str, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name = _component([a for a in argv if a] or [""])
        if name is None:
            continue
        fields = stat.rsplit(")", 1)[1].split()  # after "(comm)": state is fields[0], utime [11], stime [12]
        out[name] = out.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / _TICK
    return out


def breakdown(before: dict[str, float], after: dict[str, float]) -> str:
    """``"kube-apiserver 120.3 s, workflow-controller 80.1 s, ..."`` for what each used between the readings."""
    used = {k: after[k] - before.get(k, 0.0) for k in after}
    parts = [f"{k} {v:.1f} s" for k, v in sorted(used.items(), key=lambda kv: -kv[1]) if v >= 0.05]
    return ", ".join(parts) if parts else "no local control-plane process found"
