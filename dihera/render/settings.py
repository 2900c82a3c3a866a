"""What rendering needs besides the job: one immutable settings object, passed explicitly."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RenderSettings"]


@dataclass(frozen=True)
class RenderSettings:
    """Cluster facts that shape the rendered objects.

    ``server_url`` is the di-server's URL given to every pod as ``DI_SERVER_URL``;
    ``membership_dir`` is where each container sees the live membership ConfigMap.
    """

    server_url: str = "http://dihera-server.dihera-system.svc.cluster.local:8081"
    cluster_domain: str = "cluster.local"
    membership_dir: str = "/etc/dihera/membership"
