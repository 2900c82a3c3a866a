"""The di-server's settings: one object, built at the entry point (``dihera server``) and passed in."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from dihera.queueing import KueueSettings

__all__ = ["LOG_LEVELS", "ServerSettings", "is_loopback"]

#: Log levels the chart allows (``logLevel``), lowest first.
LOG_LEVELS = ("debug", "info", "warning", "error")
_NAMESPACE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


@dataclass(frozen=True)
class ServerSettings:
    """How the di-server listens and what it trusts.

    ``auth``: check bearer tokens (TokenReview) and permissions (SubjectAccessReview); turn off only
    for a local demo. ``namespaces``: watch (and serve) only these namespaces, one cache each, so a
    Role per namespace is enough; empty: the whole cluster. Exact names, not patterns.
    ``idempotency_seconds``: how long an ``Idempotency-Key`` is remembered per job.
    ``auth_cache_seconds``: how long an accepted token and an allowed request are remembered (a
    revoked token or role keeps working that long); ``auth_denied_cache_seconds``: a rejected token
    or a denied request (at most ``auth_cache_seconds``); 0 turns either off.
    ``log_level``: one of :data:`LOG_LEVELS`.
    ``anonymous_views``: serve the read-only views (``/ui/...``, where the Argo UI's links land) to
    callers without a token, as a browser following a link is; a token, when sent, is still checked.
    Off by default; the API's reads and every write always need a token (docs/argo-ui.md).
    ``kueue``: scale-ups of queued jobs are admitted by Kueue first (docs/queueing.md).
    ``tls_cert_file``/``tls_key_file``: serve HTTPS with this certificate (PEM) and its key, both or
    neither; neither: plain HTTP, which ``dihera server`` starts only when told so (``--plain-http``).
    ``auth`` off is refused unless ``host`` is a loopback address (127.0.0.0/8, ::1, ``localhost``).
    ``max_body_bytes``: the largest request body read (413 past it; :mod:`dihera.server.gate`).
    ``token_reviews_per_second``: TokenReviews of tokens not remembered, at most this many a second
    with bursts of twice as many (429 with Retry-After past it); 0: no limit.

    Raises ValueError naming every bad field and value at once.
    """

    host: str = "127.0.0.1"
    port: int = 8081
    kubeconfig: str | None = None
    auth: bool = True
    namespaces: tuple[str, ...] = ()
    cluster_domain: str = "cluster.local"
    idempotency_seconds: float = 600.0
    auth_cache_seconds: float = 10.0
    auth_denied_cache_seconds: float = 1.0
    log_level: str = "info"
    anonymous_views: bool = False
    #: A scale-up of a job labelled ``kueue.x-k8s.io/queue-name`` waits for Kueue to admit the added
    #: replicas (docs/queueing.md); None: jobs are scaled without asking Kueue.
    kueue: KueueSettings | None = None
    tls_cert_file: str | None = None
    tls_key_file: str | None = None
    #: 256 KiB: a scale body is under 100 bytes, a list of 1,000 replica names to remove ~20 KiB, a DI-engine
    #: profiling report with a 10,000-point history ~200 KiB (it lands in the DIJob, which etcd caps at 1.5 MiB).
    max_body_bytes: int = 256 * 1024
    #: Bursts of twice as many; a remembered token (accepted or rejected) costs none.
    token_reviews_per_second: float = 100.0

    def __post_init__(self) -> None:
        problems = [
            f"namespaces: {ns!r} is not a namespace name (lowercase letters, digits and '-', at most 63; "
            "the di-server takes exact names, not patterns)"
            for ns in self.namespaces
            if not _NAMESPACE.match(ns)
        ]
        if len(set(self.namespaces)) != len(self.namespaces):
            problems.append(f"namespaces: {', '.join(self.namespaces)!r} names a namespace twice")
        if self.log_level not in LOG_LEVELS:
            problems.append(f"log_level: {self.log_level!r} is not one of {', '.join(LOG_LEVELS)}")
        problems += [
            f"{name}: {value} is negative (seconds; 0 turns the cache off)"
            for name, value in (
                ("auth_cache_seconds", self.auth_cache_seconds),
                ("auth_denied_cache_seconds", self.auth_denied_cache_seconds),
            )
            if value < 0
        ]
        if (self.tls_cert_file is None) != (self.tls_key_file is None):
            given, missing = (
                ("tls_cert_file", "tls_key_file") if self.tls_key_file is None else ("tls_key_file", "tls_cert_file")
            )
            problems.append(f"{missing}: missing while {given} is set (HTTPS needs the certificate and its key)")
        if self.max_body_bytes < 1:
            problems.append(f"max_body_bytes: {self.max_body_bytes} is not a positive number of bytes")
        if self.token_reviews_per_second < 0:
            problems.append(
                f"token_reviews_per_second: {self.token_reviews_per_second} is negative (0 turns the limit off)"
            )
        if not self.auth and not is_loopback(self.host):
            problems.append(
                f"auth: off (--no-auth) while listening on {self.host!r}: anyone who reaches it could scale every "
                "DIJob; without auth the di-server listens only on a loopback address (--host 127.0.0.1, ::1 or "
                "localhost)"
            )
        if not 0 <= self.port <= 65535:
            problems.append(f"port: {self.port} is not a TCP port (0-65535)")
        if problems:
            raise ValueError("; ".join(problems))

    def watches(self, namespace: str) -> bool:
        """Whether this server serves jobs of ``namespace``."""
        return not self.namespaces or namespace in self.namespaces

    @property
    def scheme(self) -> str:
        """``https`` with a certificate, else ``http``."""
        return "https" if self.tls_cert_file else "http"

    def scope(self) -> str:
        """``all namespaces`` or the namespaces' names, for logs and messages."""
        return ", ".join(self.namespaces) if self.namespaces else "all namespaces"


def is_loopback(host: str) -> bool:
    """``localhost``, an address in 127.0.0.0/8, or ``::1`` (not a name that might resolve elsewhere)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
