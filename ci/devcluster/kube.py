"""The only place the dev-cluster tool talks to Kubernetes: HTTPS reads (stdlib) and `kubectl apply`."""

from __future__ import annotations

import json
import ssl
import subprocess
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Api", "http_ok"]

FIELD_MANAGER = "dihera-devcluster"


def http_ok(url: str, ca: Path | None = None, timeout: float = 2.0) -> bool:
    """True when `url` answers 200 (a health endpoint); TLS is verified against `ca`."""
    context = ssl.create_default_context(cafile=str(ca)) if ca else None
    try:
        with urllib.request.urlopen(url, timeout=timeout, context=context) as response:
            return bool(response.status == 200)
    except (OSError, urllib.error.URLError):
        return False


@dataclass(frozen=True)
class Api:
    """The API server as the admin: verified TLS with a client certificate."""

    server: str
    pki: Path
    kubeconfig: Path
    kubectl: str = "kubectl"

    def _context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.pki / "ca.crt"))
        context.load_cert_chain(str(self.pki / "admin.crt"), str(self.pki / "admin.key"))
        return context

    def get(self, path: str, timeout: float = 5.0) -> Any | None:
        """GET `path` as JSON; None on 404 or when the server cannot be reached."""
        try:
            with urllib.request.urlopen(self.server + path, timeout=timeout, context=self._context()) as response:
                body = response.read()
        except urllib.error.HTTPError as err:
            if err.code == 404:
                return None
            raise
        except OSError:
            return None
        return json.loads(body) if body.startswith(b"{") else body.decode()

    def ready(self) -> bool:
        try:
            return self.get("/readyz") == "ok"
        except urllib.error.HTTPError:
            return False

    def apply(self, files: Sequence[Path]) -> None:
        """Server-side apply of manifest files (idempotent)."""
        args = [arg for f in files for arg in ("-f", str(f))]
        self.kubectl_run("apply", "--server-side", "--force-conflicts", f"--field-manager={FIELD_MANAGER}", *args)

    def kubectl_run(self, *args: str, timeout: float = 120.0) -> str:
        result = subprocess.run(
            [self.kubectl, f"--kubeconfig={self.kubeconfig}", *args],
            capture_output=True, text=True, timeout=timeout,
        )  # fmt: skip
        if result.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)} failed: {result.stderr.strip()}")
        return result.stdout
