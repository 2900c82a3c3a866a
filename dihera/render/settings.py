"""What rendering needs besides the job: one immutable settings object, passed explicitly."""

from __future__ import annotations

from dataclasses import dataclass

from dihera.constants import DEFAULT_IMAGE, DEFAULT_PEER_WAIT_TIMEOUT

__all__ = ["RenderSettings"]


@dataclass(frozen=True)
class RenderSettings:
    """Cluster facts that shape the rendered objects.

    ``server_url`` is the di-server's URL given to every pod as ``DI_SERVER_URL``, ``server_ca`` the
    certificates (PEM) that sign its HTTPS certificate, given as ``DI_SERVER_CA`` (None: no such variable,
    the pods trust what their image trusts);
    ``membership_dir`` is where each container sees the live membership ConfigMap.
    ``peer_wait_image`` (pulled with ``peer_wait_image_pull_policy``) runs every replica's
    ``dihera-wait-peers`` init container, which waits up to ``peer_wait_timeout`` seconds for the
    replica's own and every lower rank's FQDN to resolve; 0 renders no such container (a DIJob's
    ``diengine/peer-wait-timeout`` annotation overrides it for that job).
    """

    server_url: str = "https://dihera-server.dihera-system.svc.cluster.local:8081"
    server_ca: str | None = None
    cluster_domain: str = "cluster.local"
    membership_dir: str = "/etc/dihera/membership"
    peer_wait_image: str = DEFAULT_IMAGE
    peer_wait_image_pull_policy: str = "IfNotPresent"
    peer_wait_timeout: int = DEFAULT_PEER_WAIT_TIMEOUT

    def __post_init__(self) -> None:
        if self.server_ca is not None and "-----BEGIN CERTIFICATE-----" not in self.server_ca:
            raise ValueError("server_ca: not a PEM certificate (no '-----BEGIN CERTIFICATE-----' line)")
        if self.peer_wait_timeout < 0:
            raise ValueError(f"peer_wait_timeout {self.peer_wait_timeout} must be >= 0 seconds (0: no wait)")
