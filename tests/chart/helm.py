"""Run the real `helm` on charts/dihera: the chart tests render with `helm template`, never a mock.

helm is looked up in $DIHERA_CACHE/bin (where `make tools` builds it), then on PATH; a missing helm fails
the test that needs it with a message saying how to get it.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
import yaml

__all__ = [
    "CHART",
    "KUBE_VERSION",
    "RELEASE",
    "RELEASE_NAMESPACE",
    "REPO",
    "Manifest",
    "by_kind",
    "helm_bin",
    "one",
    "render",
    "template",
]

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "dihera"
RELEASE = "dihera"
RELEASE_NAMESPACE = "dihera-system"

Manifest = dict[str, Any]


def _pinned(name: str) -> str:
    for line in (REPO / "ci" / "versions.env").read_text(encoding="utf-8").splitlines():
        key, _, value = line.partition("=")
        if key.strip() == name:
            return value.strip()
    raise KeyError(f"{name} is not set in ci/versions.env")


#: Kubernetes version the chart is rendered for (the one the local control plane runs).
KUBE_VERSION = _pinned("KUBERNETES_VERSION")


@functools.cache
def helm_bin() -> str:
    """Path of the helm binary, or fail the test naming where it was looked for."""
    cache = Path(os.environ.get("DIHERA_CACHE", Path.home() / ".cache" / "dihera")) / "bin" / "helm"
    if cache.is_file() and os.access(cache, os.X_OK):
        return str(cache)
    found = shutil.which("helm")
    if found:
        return found
    pytest.fail(f"helm not found in {cache.parent} or on PATH: run `make tools` (ci/build-tools.sh helm)")


def template(values: Manifest | None = None, *args: str, chart: Path = CHART) -> subprocess.CompletedProcess[str]:
    """`helm template dihera <chart> -n dihera-system` with `values` on stdin; the finished process."""
    cmd = [
        helm_bin(),
        "template",
        RELEASE,
        str(chart),
        "--namespace",
        RELEASE_NAMESPACE,
        "--kube-version",
        KUBE_VERSION,
        "-f",
        "-",
        *args,
    ]
    return subprocess.run(cmd, input=json.dumps(values or {}), capture_output=True, text=True, check=False)


@functools.cache
def _render(values_json: str) -> tuple[Manifest, ...]:
    done = template(json.loads(values_json))
    if done.returncode != 0:
        raise AssertionError(f"helm template failed:\n{done.stderr}")
    return tuple(d for d in yaml.safe_load_all(done.stdout) if d)


def render(values: Manifest | None = None) -> list[Manifest]:
    """Every object the chart renders with `values` (cached per values)."""
    return list(_render(json.dumps(values or {}, sort_keys=True)))


def by_kind(objects: Iterable[Manifest], kind: str) -> list[Manifest]:
    return [o for o in objects if o["kind"] == kind]


def one(objects: Iterable[Manifest], kind: str, name: str, namespace: str | None = None) -> Manifest:
    """The single object of that kind and name (and namespace, if given); fails naming what is there."""
    found = [
        o
        for o in by_kind(objects, kind)
        if o["metadata"]["name"] == name and (namespace is None or o["metadata"].get("namespace") == namespace)
    ]
    if len(found) != 1:
        names = sorted(f"{o['metadata'].get('namespace', '')}/{o['metadata']['name']}" for o in by_kind(objects, kind))
        raise AssertionError(f"expected one {kind} {namespace or ''}/{name}, found {len(found)}; {kind}s: {names}")
    return found[0]
