"""Layout of the state directory (.devcluster/) and the ports kept in it."""

from __future__ import annotations

import contextlib
import fcntl
import json
import shutil
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PORT_NAMES", "StateDir", "di_server_url", "pick_ports"]

MARKER = ".dihera-devcluster"
#: What outlives the dev cluster in its state directory: the browser test's screenshots, for a person to see.
KEPT = (".lock", "screenshots")
PORT_NAMES = (
    "etcd",
    "etcd-peer",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "workflow-controller",
    # Not a process of the cluster: where a di-server is reached from the host (`make demo`'s port-forward,
    # the tests' in-process server), so the Argo UI's links in Argo's ConfigMap point at a known URL.
    "di-server",
    "argo-server",  # reserved for every pair; only a pair with a loopback argo server main runs it
    # Kueue's manager, started on demand (`python -m ci.devcluster kueue-up`, ci/devcluster/kueue.py)
    "kueue-webhook",
    "kueue-health",
    "kueue-metrics",
    # The real node's object store, weed mini (ci/devcluster/objectstore.py PORT_FLAGS)
    "store-master",
    "store-master-grpc",
    "store-volume",
    "store-volume-grpc",
    "store-filer",
    "store-filer-grpc",
    "store-s3",
    "store-s3-grpc",
    "store-admin",
    "store-admin-grpc",
)


@dataclass(frozen=True)
class StateDir:
    """Everything a running dev cluster keeps: certs, etcd data, logs, pids, ports, kubeconfigs."""

    root: Path

    @property
    def pki(self) -> Path:
        return self.root / "pki"

    @property
    def etcd_data(self) -> Path:
        return self.root / "etcd"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def pids(self) -> Path:
        return self.root / "pids"

    @property
    def home(self) -> Path:
        """HOME of the child processes, so no user config (~/.kube, ~/.kwok) leaks in."""
        return self.root / "home"

    @property
    def manifests(self) -> Path:
        return self.root / "manifests"

    @property
    def kubeconfig(self) -> Path:
        """The admin kubeconfig handed to people and tests."""
        return self.root / "kubeconfig"

    @property
    def audit_policy(self) -> Path:
        return self.root / "audit-policy.yaml"

    @property
    def audit_log(self) -> Path:
        """The API server's audit log: requests of dihera's ServiceAccounts (tests/integration/test_rbac_audit.py)."""
        return self.logs / "audit.log"

    @property
    def screenshots(self) -> Path:
        """The Argo UI test's screenshots; `down` keeps them (KEPT)."""
        return self.root / "screenshots"

    @property
    def argo_ui_url(self) -> Path:
        """A file holding the Argo UI's URL (`make cluster-up` and `make demo` write it)."""
        return self.root / "argo-ui-url"

    def component_kubeconfig(self, user: str) -> Path:
        return self.root / "kubeconfigs" / f"{user}.kubeconfig"

    def create(self) -> None:
        for d in (self.root, self.pki, self.logs, self.pids, self.home, self.manifests, self.root / "kubeconfigs"):
            d.mkdir(parents=True, exist_ok=True)
        (self.root / MARKER).touch()
        self.pki.chmod(0o700)

    def exists(self) -> bool:
        return (self.root / MARKER).exists()

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Hold an exclusive lock on the state dir (two `up`s at once would start everything twice)."""
        self.root.mkdir(parents=True, exist_ok=True)
        with (self.root / ".lock").open("w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            yield

    def reset(self) -> None:
        """Empty the state directory, keeping its lock file and screenshots (KEPT)."""
        if self.root.exists() and not self.exists() and any(p.name not in KEPT for p in self.root.iterdir()):
            raise RuntimeError(f"{self.root} has no {MARKER} marker: not emptying a directory this tool did not create")
        self._empty()

    def remove(self) -> None:
        """Delete the state directory (all but the screenshots, when there are some); refuses a directory
        this tool did not create."""
        if not self.root.exists():
            return
        if not self.exists():
            raise RuntimeError(f"{self.root} has no {MARKER} marker: not deleting a directory this tool did not create")
        if self.screenshots.is_dir():
            self._empty(keep=("screenshots",))
        else:
            shutil.rmtree(self.root)

    def _empty(self, keep: tuple[str, ...] = KEPT) -> None:
        for path in self.root.iterdir() if self.root.exists() else ():
            if path.name not in keep:
                shutil.rmtree(path) if path.is_dir() else path.unlink()

    def load_ports(self) -> dict[str, int] | None:
        path = self.root / "ports.json"
        if not path.exists():
            return None
        ports = json.loads(path.read_text())
        if not set(ports) <= set(PORT_NAMES):
            return None
        missing = [name for name in PORT_NAMES if name not in ports]
        if missing:  # a state written before a port was added: the running processes keep theirs
            ports.update(pick_ports(max(ports.values(), default=21000) + 1, missing))
            self.save_ports(ports)
        return ports

    def save_ports(self, ports: dict[str, int]) -> None:
        (self.root / "ports.json").write_text(json.dumps(ports, indent=2) + "\n")


def di_server_url(ports: dict[str, int]) -> str:
    """The URL the Argo UI's links and `make demo` use for the di-server (dihera.argo_ui): HTTPS, as the chart's
    di-server serves by default (`make demo` forwards its port here; its certificate names 127.0.0.1)."""
    return f"https://127.0.0.1:{ports['di-server']}"


def _free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def pick_ports(first: int, names: tuple[str, ...] | list[str] = PORT_NAMES) -> dict[str, int]:
    """Free loopback ports for every component (or `names`), searched upward from `first`."""
    ports: dict[str, int] = {}
    candidate = first
    for name in names:
        while not _free(candidate):
            candidate += 1
            if candidate > 65535:
                raise RuntimeError(f"no free port on 127.0.0.1 above {first}")
        ports[name] = candidate
        candidate += 1
    return ports
