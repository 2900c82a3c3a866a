"""A job as one read saw it: the DIJob, its membership ConfigMap, its pods (plain data, no I/O)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dihera.shapes.configmap import ConfigMap
from dihera.shapes.pod import Pod

__all__ = ["JobSnapshot"]


@dataclass(frozen=True)
class JobSnapshot:
    """The DIJob, its membership ConfigMap (None before the job starts) and its pods, from the watch layer's
    store (the di-server) or read from the API server (``dihera status``)."""

    body: Mapping[str, Any]
    configmap: ConfigMap | None
    pods: tuple[Pod, ...]
