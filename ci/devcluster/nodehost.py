"""What the real node changes on the machine, and how it is undone.

The real node's network namespace, the claim that makes it the only real node on this machine, and a
teardown that leaves nothing behind: container processes, mounts under the node's directories, pod
network namespaces, `/kubepods` cgroups in every hierarchy, and the fixed host paths that kubelet and
containerd write whatever their configuration says.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from . import realnode

__all__ = ["NodeBusy", "claim", "create_netns", "owner", "pod_link", "release", "teardown"]

log = logging.getLogger("devcluster")

CLAIM_DIR = Path("/run/dihera-realnode")
# Written by kubelet and containerd whatever their root/state settings say (see real-node.md).
FIXED_PATHS = (
    Path("/var/log/pods"),
    Path("/var/log/containers"),
    Path("/var/lib/kubelet"),
    Path("/usr/libexec/kubernetes"),
    Path("/var/lib/cni"),
    Path("/opt/containerd"),
    Path("/run/containerd"),
    Path("/run/netns"),  # ip netns and containerd pin network namespaces here
)
CGROUP_ROOT = Path("/sys/fs/cgroup")
SHIM = "containerd-shim-runc-v2"


class NodeBusy(RuntimeError):
    """Another state directory on this machine runs the real node."""


def _run(*argv: str) -> None:
    subprocess.run(list(argv), check=True, capture_output=True, text=True)


# -- one real node per machine -------------------------------------------------------------------


def owner() -> Path | None:
    """The state directory whose cluster runs this machine's real node, if any."""
    owner_file = CLAIM_DIR / "owner"
    return Path(owner_file.read_text().strip()) if owner_file.exists() else None


def claim(state_root: Path) -> None:
    """Record `state_root` as the owner of this machine's real node.

    Fails when another state directory holds the claim and its kubelet still runs; a stale claim
    (its owner's kubelet gone) is cleaned up and taken over. Records which fixed host paths already
    existed, so the teardown removes only those the node created.
    """
    current = owner()
    if current == state_root:
        return
    if current is not None:
        if _runs_kubelet(current):
            raise NodeBusy(
                f"the real node of this machine belongs to the cluster in {current}: stop it there "
                "(make cluster-down) or start this one without a real node (DIHERA_REAL_NODE=0)"
            )
        log.info("taking over the real node from %s (no longer running): cleaning up after it", current)
        teardown(current / "node")
        release()
    CLAIM_DIR.mkdir(parents=True, exist_ok=True)
    created = [str(p) for p in FIXED_PATHS if not p.exists()]
    (CLAIM_DIR / "created-paths").write_text("".join(f"{p}\n" for p in created))
    (CLAIM_DIR / "owner").write_text(f"{state_root}\n")


def _runs_kubelet(state_root: Path) -> bool:
    """True when the kubelet recorded in `state_root`'s pid file is alive."""
    try:
        pid = int((state_root / "pids" / "kubelet.pid").read_text().strip())
    except (OSError, ValueError):
        return False
    argv = _read(Path(f"/proc/{pid}/cmdline")).split("\0")
    return argv[0].endswith("/kubelet")


def release() -> None:
    """Remove the fixed host paths the node created, then the claim."""
    created = CLAIM_DIR / "created-paths"
    for line in created.read_text().splitlines() if created.exists() else ():
        path = Path(line)
        _unmount_under(path)
        shutil.rmtree(path, ignore_errors=True)
    shutil.rmtree(CLAIM_DIR, ignore_errors=True)


# -- network namespace ----------------------------------------------------------------------------


def create_netns() -> None:
    """NETNS with loopback up, carrying the node's and the object store's addresses and the two Service IPs."""
    if not realnode.NETNS_PATH.exists():
        _run("ip", "netns", "add", realnode.NETNS)
    ns = ("ip", "-n", realnode.NETNS)
    _run(*ns, "link", "set", "lo", "up")
    addresses = subprocess.run([*ns, "-o", "addr", "show", "dev", "lo"], check=True, capture_output=True, text=True)
    for ip in (realnode.NODE_IP, realnode.OBJECT_STORE_IP, realnode.API_SERVICE_IP, realnode.DNS_SERVICE_IP):
        if f" {ip}/32 " not in addresses.stdout:
            _run(*ns, "addr", "add", f"{ip}/32", "dev", "lo")


# -- teardown -------------------------------------------------------------------------------------


def teardown(node_root: Path) -> None:
    """Kill every container and shim, unmount, delete pod namespaces, NETNS (its bridge with it), cgroups."""
    _kill_cgroup_members()
    for pid in _shims(node_root):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    _unmount_under(node_root)
    for pinned in Path("/run/netns").glob("cni-*"):
        with contextlib.suppress(subprocess.CalledProcessError):
            _run("umount", "-l", str(pinned))
        pinned.unlink(missing_ok=True)
    if realnode.NETNS_PATH.exists():
        _run("ip", "netns", "delete", realnode.NETNS)
    _remove_cgroups()


def pod_link(pod_uid: str, up: bool) -> None:
    """Unplug (or plug back) the pod's cable: its veth's peer on the node's bridge set down (up). The pod keeps
    its address and routes (the kernel marks them linkdown), as a cut cable does; nothing else changes."""
    marker = f"pod{pod_uid}"
    pids = [
        int(p) for d in _cgroup_dirs() if marker in (d.name, d.parent.name) for p in _read(d / "cgroup.procs").split()
    ]
    if not pids:
        raise RuntimeError(f"no process of pod {pod_uid} in the /kubepods cgroups")
    inside = subprocess.run(
        ["nsenter", f"--net=/proc/{pids[0]}/ns/net", "ip", "-o", "link", "show", "eth0"],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    peer = inside.split(":")[1].strip().split("@if")[1]  # "3: eth0@if12: <...>": the peer's index, 12
    links = subprocess.run(
        ["ip", "-n", realnode.NETNS, "-o", "link", "show"], check=True, capture_output=True, text=True
    )
    (name,) = [
        line.split(":")[1].strip().split("@")[0] for line in links.stdout.splitlines() if line.startswith(f"{peer}:")
    ]
    _run("ip", "-n", realnode.NETNS, "link", "set", "dev", name, "up" if up else "down")


def _cgroup_dirs() -> list[Path]:
    """Every `kubepods` cgroup directory, deepest first, in every hierarchy."""
    found = [d for h in CGROUP_ROOT.iterdir() if (d := h / "kubepods").is_dir()]
    # os.walk, not rglob: a container's cgroup removed during the walk is skipped, not an error
    nested = [Path(top) / name for d in found for top, names, _ in os.walk(d) for name in names]
    return sorted(nested, key=lambda p: len(p.parts), reverse=True) + found


def _kill_cgroup_members() -> None:
    for _ in range(50):
        pids = {int(pid) for d in _cgroup_dirs() for pid in _read(d / "cgroup.procs").split()}
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)
    log.warning("processes still in /kubepods cgroups after SIGKILL")


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _shims(node_root: Path) -> list[int]:
    needle = str(node_root)
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            argv = _read(entry / "cmdline").split("\0")
            if argv and argv[0].endswith(SHIM) and any(needle in a for a in argv):
                pids.append(int(entry.name))
    return pids


def _unmount_under(root: Path) -> None:
    """Lazily unmount every mount point under `root`, deepest first."""
    prefix = str(root.resolve()) if root.exists() else str(root)
    points = []
    for line in _read(Path("/proc/self/mountinfo")).splitlines():
        point = line.split()[4].encode().decode("unicode_escape")
        if point == prefix or point.startswith(prefix + "/"):
            points.append(point)
    for point in sorted(set(points), key=len, reverse=True):
        with contextlib.suppress(subprocess.CalledProcessError):
            _run("umount", "-l", point)


def _remove_cgroups() -> None:
    for d in _cgroup_dirs():
        with contextlib.suppress(OSError):
            d.rmdir()
