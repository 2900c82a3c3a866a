"""Who is calling and may they: the backend's reviews behind the :class:`~dihera.server.authcache.AuthCache`.

A remembered answer is given on the event loop at once; only a miss runs the backend's blocking
review (an API call) in the threadpool, within the :class:`~dihera.server.authcache.ReviewBudget` (past it:
429 with Retry-After, the API server not asked).
"""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool

from dihera.kube.auth import Identity
from dihera.server.authcache import AuthCache, ReviewBudget
from dihera.server.backend import Backend
from dihera.server.errors import ApiError

__all__ = ["Access"]


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
