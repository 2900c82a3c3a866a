"""Kubeconfig files for the admin and each component (JSON, which every kubeconfig reader accepts as YAML)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

__all__ = ["CLUSTER_NAME", "render_kubeconfig", "write_kubeconfig"]

CLUSTER_NAME = "dihera-dev"


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def render_kubeconfig(server: str, pki: Path, stem: str, user: str) -> dict[str, Any]:
    """A kubeconfig with the CA and the client cert/key of `stem` embedded."""
    cluster = {"server": server, "certificate-authority-data": _b64(pki / "ca.crt")}
    credentials = {"client-certificate-data": _b64(pki / f"{stem}.crt"), "client-key-data": _b64(pki / f"{stem}.key")}
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CLUSTER_NAME, "cluster": cluster}],
        "users": [{"name": user, "user": credentials}],
        "contexts": [{"name": CLUSTER_NAME, "context": {"cluster": CLUSTER_NAME, "user": user}}],
        "current-context": CLUSTER_NAME,
    }


def write_kubeconfig(path: Path, config: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config, indent=2) + "\n")
    path.chmod(0o600)
