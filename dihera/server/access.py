"""Who is calling and may they: TokenReview and SubjectAccessReview answers, remembered for a short time
(as kube-rbac-proxy does), the backend's reviews behind them.

:class:`Access` gives a remembered answer on the event loop at once; only a miss runs the backend's blocking
review (an API call) in the threadpool, within the :class:`ReviewBudget` (past it: 429 with Retry-After, the
API server not asked).

The cache (:class:`AuthCache`) is pure: the clock is injected, nothing in it talks to Kubernetes. Keys:

- identities by the SHA-256 of the bearer token (the token itself is never kept);
- decisions by (username, uid, groups, extra, verb, namespace, name, subresource): everything the
  SubjectAccessReview asked, so two callers or two jobs never share an answer.

An accepted token or an allowed request is remembered for ``ttl`` seconds; a rejected token or a
denied request for ``denied_ttl`` (shorter: a caller who was just granted a role waits at most that
long, while a flood of bad tokens still costs the API server one review per ``denied_ttl``). The
trade-off: a revoked token or role keeps working for up to ``ttl`` seconds on each di-server replica.
``ttl`` 0 turns the cache off.

:class:`ReviewBudget` bounds how many tokens not remembered are reviewed a second (a token bucket per
di-server): a flood of distinct bogus tokens, which no cache helps against, costs the API server at most
that many TokenReviews; the caller past it is told when to come back (429, Retry-After). Remembered tokens
cost nothing and are never refused.
"""

from __future__ import annotations

import hashlib
import math
import threading
import time
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from starlette.concurrency import run_in_threadpool

from dihera.kube.auth import Identity
from dihera.server.backend import Backend
from dihera.server.errors import ApiError

__all__ = ["Access", "AuthCache", "ReviewBudget", "TTLCache", "decision_key", "token_key"]

V = TypeVar("V")


class TTLCache(Generic[V]):
    """A bounded map whose entries expire; the oldest entry goes first when it is full."""

    def __init__(self, clock: Callable[[], float], size: int) -> None:
        self._clock, self._size = clock, size
        self._data: dict[Hashable, tuple[float, V]] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> tuple[bool, V | None]:
        """``(True, value)`` while the entry lives, else ``(False, None)``."""
        with self._lock:
            hit = self._data.get(key)
            if hit is None:
                return False, None
            if hit[0] <= self._clock():
                del self._data[key]
                return False, None
            return True, hit[1]

    def put(self, key: Hashable, value: V, ttl: float) -> None:
        """Remember ``value`` for ``ttl`` seconds (not at all when ``ttl`` <= 0)."""
        if ttl <= 0:
            return
        with self._lock:
            self._data.pop(key, None)
            while len(self._data) >= self._size:
                del self._data[next(iter(self._data))]
            self._data[key] = (self._clock() + ttl, value)

    def __len__(self) -> int:
        return len(self._data)


def token_key(token: str) -> str:
    """What an identity is remembered by: a hash, so a memory dump holds no token."""
    return hashlib.sha256(token.encode()).hexdigest()


def decision_key(identity: Identity, verb: str, namespace: str, name: str, subresource: str = "") -> Hashable:
    """Everything a SubjectAccessReview asks about."""
    extra = tuple(sorted((k, tuple(v)) for k, v in identity.extra.items()))
    return identity.username, identity.uid, identity.groups, extra, verb, namespace, name, subresource


class AuthCache:
    """Identities by token hash and decisions by request, each for ``ttl`` (``denied_ttl`` when refused)."""

    def __init__(
        self, ttl: float, denied_ttl: float, clock: Callable[[], float] = time.monotonic, size: int = 4096
    ) -> None:
        self.ttl = ttl
        self.denied_ttl = min(denied_ttl, ttl)
        self._identities: TTLCache[Identity | None] = TTLCache(clock, size)
        self._decisions: TTLCache[bool] = TTLCache(clock, size)

    def identity(self, token: str) -> tuple[bool, Identity | None]:
        """``(True, identity)`` if the token's review is remembered (identity None: rejected)."""
        return self._identities.get(token_key(token))

    def remember_identity(self, token: str, identity: Identity | None) -> None:
        self._identities.put(token_key(token), identity, self.ttl if identity is not None else self.denied_ttl)

    def decision(self, identity: Identity, verb: str, namespace: str, name: str, subresource: str = "") -> bool | None:
        """The remembered answer, or None when the API server must be asked."""
        hit, allowed = self._decisions.get(decision_key(identity, verb, namespace, name, subresource))
        return allowed if hit else None

    def remember_decision(
        self, identity: Identity, verb: str, namespace: str, name: str, allowed: bool, subresource: str = ""
    ) -> None:
        ttl = self.ttl if allowed else self.denied_ttl
        self._decisions.put(decision_key(identity, verb, namespace, name, subresource), allowed, ttl)


class ReviewBudget:
    """A token bucket: ``rate`` reviews a second, bursts of ``2 * rate``; ``rate`` 0: no limit."""

    def __init__(self, rate: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate, self.capacity = rate, max(1.0, 2 * rate)
        self._clock = clock
        self._tokens, self._at = self.capacity, clock()
        self._lock = threading.Lock()

    def take(self) -> float:
        """0 when a review may run now (and counts it), else the seconds until one may (a whole number, >= 1)."""
        if self.rate <= 0:
            return 0.0
        with self._lock:
            now = self._clock()
            self._tokens = min(self.capacity, self._tokens + (now - self._at) * self.rate)
            self._at = now
            if self._tokens >= 1:
                self._tokens -= 1
                return 0.0
            return float(max(1, math.ceil((1 - self._tokens) / self.rate)))


class Access:
    def __init__(self, backend: Backend, cache: AuthCache, budget: ReviewBudget | None = None) -> None:
        self._backend, self._cache = backend, cache
        self._budget = budget or ReviewBudget(0)

    async def identity(self, token: str) -> Identity | None:
        """The token's identity (TokenReview), None when the API server rejects it.

        Raises ApiError 429 (with Retry-After) when the token is not remembered and the budget of reviews is spent.
        """
        hit, identity = self._cache.identity(token)
        if not hit:
            wait = self._budget.take()
            if wait:
                raise ApiError(
                    429,
                    f"too many new bearer tokens to review (at most {self._budget.rate:g} a second on this di-server); "
                    f"retry in {wait:.0f} s",
                    {"Retry-After": f"{wait:.0f}"},
                )
            identity = await run_in_threadpool(self._backend.authenticate, token)
            self._cache.remember_identity(token, identity)
        return identity

    async def allowed(self, identity: Identity, verb: str, namespace: str, name: str, subresource: str = "") -> bool:
        """May ``identity`` ``verb`` the DIJob, or its ``subresource`` when given (SubjectAccessReview)?"""
        allowed = self._cache.decision(identity, verb, namespace, name, subresource)
        if allowed is None:
            allowed = await run_in_threadpool(self._backend.allowed, identity, verb, namespace, name, subresource)
            self._cache.remember_decision(identity, verb, namespace, name, allowed, subresource)
        return allowed

    def remembered_allowed(self, token: str, verb: str, namespace: str, name: str) -> bool:
        """Whether both reviews are remembered and say yes: the token's identity and its right to ``verb``
        the DIJob. False means "not known to be allowed" (ask, as :meth:`identity` and :meth:`allowed` do)."""
        hit, identity = self._cache.identity(token)
        return hit and identity is not None and self._cache.decision(identity, verb, namespace, name) is True
