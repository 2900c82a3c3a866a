"""Who is calling and may they: the backend's reviews behind the :class:`~dihera.server.authcache.AuthCache`.

A remembered answer is given on the event loop at once; only a miss runs the backend's blocking
review (an API call) in the threadpool.
"""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool

from dihera.kube.auth import Identity
from dihera.server.authcache import AuthCache
from dihera.server.backend import Backend

__all__ = ["Access"]


class Access:
    def __init__(self, backend: Backend, cache: AuthCache) -> None:
        self._backend, self._cache = backend, cache

    async def identity(self, token: str) -> Identity | None:
        """The token's identity (TokenReview), None when the API server rejects it."""
        hit, identity = self._cache.identity(token)
        if not hit:
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
