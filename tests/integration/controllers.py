"""``dihera controller`` as a subprocess on the local control plane, with a token of the chart's ServiceAccount.

The ``controller_kubeconfig`` and ``controller`` fixtures (conftest.py) are made of these: the chart's
controller RBAC applied from ``helm template``, a kubeconfig holding a token of
``dihera-system:dihera-controller``, and a controller watching the test's namespace only, so a permission
the chart lacks fails the test. :class:`Replica` is one of several controllers campaigning for a Lease.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

__all__ = [
    "DIHERA",
    "LEASE",
    "RBAC_KINDS",
    "RENEW",
    "RETRY",
    "SA_NAME",
    "SA_NAMESPACE",
    "Controller",
    "Replica",
    "controller_env",
    "denied",
    "free_port",
    "helm_path",
    "kubectl",
]

DIHERA = str(Path(sys.executable).with_name("dihera"))
SA_NAMESPACE, SA_NAME = "dihera-system", "dihera-controller"
RBAC_KINDS = {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Namespace"}
#: --leader-elect-lease-duration / renew-deadline / retry-period of the test's replicas (seconds)
LEASE, RENEW, RETRY = 6, 4, 1


def helm_path() -> str:
    """helm on PATH, else $DIHERA_CACHE/bin/helm; the test is skipped without either."""
    found = shutil.which("helm") or str(
        Path(os.environ.get("DIHERA_CACHE", Path.home() / ".cache/dihera")) / "bin/helm"
    )
    if not Path(found).exists():
        pytest.skip("helm is not installed (make tools)")
    return found


def kubectl(kubeconfig: Path, *args: str, stdin: str | None = None) -> str:
    """``kubectl`` with ``args``: its output; an AssertionError with its stderr when it fails."""
    out = subprocess.run(
        ["kubectl", f"--kubeconfig={kubeconfig}", *args], input=stdin, capture_output=True, text=True, check=False
    )
    if out.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)}: {out.stderr}")
    return out.stdout


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def controller_env() -> dict[str, str]:
    """The test controllers' environment: replicas' peer wait from the project's image built here, never
    pulled (the real node holds it; kwok nodes pull nothing), as the chart's realnode values give it."""
    from ci.devcluster import Settings
    from ci.devcluster.images import DIHERA_IMAGE, package_version

    image = f"{DIHERA_IMAGE}:{package_version(Settings.from_environ())}"
    return {**os.environ, "DIHERA_PEER_WAIT_IMAGE": image, "DIHERA_PEER_WAIT_IMAGE_PULL_POLICY": "Never"}


class Controller:
    """``dihera controller`` as a subprocess watching one namespace; log in ``log``."""

    def __init__(self, kubeconfig: Path, namespace: str, log: Path) -> None:
        self.kubeconfig, self.namespace, self.log = kubeconfig, namespace, log
        self.metrics_port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        argv = [DIHERA, "controller", "--kubeconfig", str(self.kubeconfig), "-n", self.namespace, "--standalone"]
        argv += ["--metrics-port", str(self.metrics_port), "--health-port", "0"]
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=controller_env())

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=30)

    def logs(self) -> str:
        return self.log.read_text(errors="replace")


class Replica:
    """One ``dihera controller`` replica campaigning for ``lease``; log in ``log``, metrics on ``metrics_port``."""

    def __init__(self, identity: str, kubeconfig: Path, namespace: str, lease: str, log: Path) -> None:
        self.identity, self.log = identity, log
        self.metrics_port = free_port()
        self.argv = [DIHERA, "controller", "--kubeconfig", str(kubeconfig), "-n", namespace, "--identity", identity]
        self.argv += ["--leader-elect-resource-name", lease, "--leader-elect-resource-namespace", SA_NAMESPACE]
        self.argv += ["--leader-elect-lease-duration", str(LEASE), "--leader-elect-renew-deadline", str(RENEW)]
        self.argv += ["--leader-elect-retry-period", str(RETRY), "--metrics-port", str(self.metrics_port)]
        self.argv += ["--health-port", "0"]
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("DIHERA_")}
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(self.argv, stdout=out, stderr=subprocess.STDOUT, env=env)

    def kill(self, sig: int = signal.SIGKILL) -> int | None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            return self.proc.wait(timeout=30)
        return None

    def lines(self, *needles: str) -> list[str]:
        """Log lines containing every needle."""
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return [line for line in text.splitlines() if all(n in line for n in needles)]

    def leading(self) -> bool:
        return bool(self.lines("leading: holds the Lease"))

    def metrics(self) -> dict[str, float]:
        """``dihera_api_writes_total`` as ``verb kind`` -> count, ``requests`` (every API request: reads too)
        and ``reconciles`` (passes run)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5) as rsp:
            text = rsp.read().decode()
        found: dict[str, float] = {"reconciles": 0.0, "requests": 0.0}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == "dihera_api_writes_total":
                    found[f"{sample.labels['verb']} {sample.labels['kind']}"] = sample.value
                elif sample.name == "dihera_api_requests_total":
                    found["requests"] += sample.value
                elif sample.name == "dihera_reconcile_duration_seconds_count":
                    found["reconciles"] = sample.value
        return found

    def writes(self) -> float:
        return sum(v for k, v in self.metrics().items() if k not in ("reconciles", "requests"))


def denied(logs: str) -> list[str]:
    """The controller's ERROR lines of a request the API server refused (``403 Forbidden``, as
    dihera.kube.errors words it): a permission the chart lacks. Not any line with "403" in it: a
    timestamp's milliseconds can read 403."""
    return [line for line in logs.splitlines() if "level=ERROR" in line and "403 Forbidden" in line]
