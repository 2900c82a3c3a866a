"""The di-server's settings: one object, built at the entry point (``dihera server``) and passed in."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ServerSettings"]


@dataclass(frozen=True)
class ServerSettings:
    """How the di-server listens and what it trusts.

    ``auth``: check bearer tokens (TokenReview) and permissions (SubjectAccessReview); turn off only
    for a local demo. ``namespace``: watch one namespace instead of the whole cluster.
    ``idempotency_seconds``: how long an ``Idempotency-Key`` is remembered per job.
    """

    host: str = "127.0.0.1"
    port: int = 8081
    kubeconfig: str | None = None
    auth: bool = True
    namespace: str | None = None
    cluster_domain: str = "cluster.local"
    idempotency_seconds: float = 600.0
    auth_cache_seconds: float = 10.0
    log_level: str = "info"
