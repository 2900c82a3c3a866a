"""Pieces the experiments' Workflows share (sweeps, pipelines): a restricted container, a resource step that
checks its object every second, tolerations as Hera models."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from hera.workflows import models as m

__all__ = ["CHECK_EVERY_SECOND", "RESTRICTED", "tolerations"]

#: A container of the experiment's own (dihera's image): what the ``restricted`` Pod Security Standard asks.
RESTRICTED = m.SecurityContext(
    allow_privilege_escalation=False,
    capabilities=m.Capabilities(drop=["ALL"]),
    read_only_root_filesystem=True,
    run_as_non_root=True,
    seccomp_profile=m.SeccompProfile(type="RuntimeDefault"),
)

#: Argo's executor checks a resource's success and failure conditions every 5 s by default: a node that waits
#: for a DIJob ends within a second of it instead (one GET a second), and what follows starts sooner.
CHECK_EVERY_SECOND = json.dumps(
    {"containers": [{"name": "main", "env": [{"name": "RESOURCE_STATE_CHECK_INTERVAL", "value": "1s"}]}]}
)


def tolerations(given: Sequence[Mapping[str, Any]]) -> list[m.Toleration] | None:
    """Pod-spec tolerations (camelCase keys) as Hera models; None for none."""
    found = [m.Toleration(**{re.sub(r"([A-Z])", lambda x: "_" + x.group(1).lower(), k): v for k, v in t.items()})
             for t in given]  # fmt: skip
    return found or None
