"""Which (Kubernetes, Argo) pair the cluster tests run on: the dev cluster's Settings decide."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # `ci` is a top-level folder of the repo, not an installed package
    sys.path.insert(0, str(REPO))

from ci.devcluster import Settings  # noqa: E402

__all__ = ["pair"]


def pair() -> tuple[str, str]:
    """The (Kubernetes, Argo) versions of the local control plane ($DIHERA_KUBERNETES_VERSION /
    $DIHERA_ARGO_VERSION, else ci/versions.env)."""
    settings = Settings.from_environ()
    return settings.kubernetes_version, settings.argo_version
