"""Who is calling and may they: TokenReview and SubjectAccessReview, with a short-lived cache.

Answers are cached for ``ttl`` seconds (by a hash of the token; never the token itself), so a busy
client does not cost two API calls per request; a revoked token or role stops working within ``ttl``.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client

from dihera.schema import GROUP, PLURAL

__all__ = ["Authenticator", "Identity"]


@dataclass(frozen=True)
class Identity:
    """An authenticated caller, as the API server's TokenReview names it."""

    username: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


class _TTLCache:
    def __init__(self, ttl: float, clock: Callable[[], float], size: int = 4096) -> None:
        self._ttl, self._clock, self._size = ttl, clock, size
        self._data: dict[Any, tuple[float, Any]] = {}
        self._lock = threading.Lock()

    def get(self, key: Any) -> tuple[bool, Any]:
        with self._lock:
            hit = self._data.get(key)
            if hit is None or hit[0] < self._clock():
                return False, None
            return True, hit[1]

    def put(self, key: Any, value: Any) -> None:
        with self._lock:
            if len(self._data) >= self._size:
                self._data.clear()
            self._data[key] = (self._clock() + self._ttl, value)


class Authenticator:
    """TokenReview (who) and SubjectAccessReview (may they) against the API server."""

    def __init__(self, api: client.ApiClient, ttl: float = 10.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._authn = client.AuthenticationV1Api(api)
        self._authz = client.AuthorizationV1Api(api)
        self._identities = _TTLCache(ttl, clock)
        self._decisions = _TTLCache(ttl, clock)

    def authenticate(self, token: str) -> Identity | None:
        """The token's identity, or None when the API server does not accept it."""
        key = hashlib.sha256(token.encode()).hexdigest()
        hit, cached = self._identities.get(key)
        if hit:
            return cached  # type: ignore[no-any-return]
        review = client.V1TokenReview(spec=client.V1TokenReviewSpec(token=token))
        status = self._authn.create_token_review(review).status
        identity = None
        if status is not None and status.authenticated and status.user is not None:
            user = status.user
            identity = Identity(
                username=user.username or "",
                uid=user.uid or "",
                groups=tuple(user.groups or ()),
                extra={k: tuple(v) for k, v in (user.extra or {}).items()},
            )
        self._identities.put(key, identity)
        return identity

    def allowed(self, identity: Identity, verb: str, namespace: str, name: str) -> bool:
        """May ``identity`` ``verb`` the DIJob ``namespace/name``?"""
        key = (identity.username, identity.uid, identity.groups, verb, namespace, name)
        hit, cached = self._decisions.get(key)
        if hit:
            return bool(cached)
        review = client.V1SubjectAccessReview(
            spec=client.V1SubjectAccessReviewSpec(
                user=identity.username,
                uid=identity.uid or None,
                groups=list(identity.groups) or None,
                extra={k: list(v) for k, v in identity.extra.items()} or None,
                resource_attributes=client.V1ResourceAttributes(
                    group=GROUP, resource=PLURAL, verb=verb, namespace=namespace, name=name
                ),
            )
        )
        status = self._authz.create_subject_access_review(review).status
        decision = bool(status is not None and status.allowed)
        self._decisions.put(key, decision)
        return decision
