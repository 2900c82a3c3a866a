"""Who is calling and may they: TokenReview and SubjectAccessReview, one API call each.

The di-server remembers the answers for a short time (:mod:`dihera.server.access`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

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


class Authenticator:
    """TokenReview (who) and SubjectAccessReview (may they) against the API server."""

    def __init__(self, api: client.ApiClient) -> None:
        self._authn = client.AuthenticationV1Api(api)
        self._authz = client.AuthorizationV1Api(api)

    def authenticate(self, token: str) -> Identity | None:
        """The token's identity, or None when the API server does not accept it."""
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
        return identity

    def allowed(self, identity: Identity, verb: str, namespace: str, name: str, subresource: str = "") -> bool:
        """May ``identity`` ``verb`` the DIJob ``namespace/name`` (its ``subresource``, when given: RBAC rules
        may name any subresource, e.g. ``dijobs/profilings``, which the API server itself does not serve)?"""
        review = client.V1SubjectAccessReview(
            spec=client.V1SubjectAccessReviewSpec(
                user=identity.username,
                uid=identity.uid or None,
                groups=list(identity.groups) or None,
                extra={k: list(v) for k, v in identity.extra.items()} or None,
                resource_attributes=client.V1ResourceAttributes(
                    group=GROUP,
                    resource=PLURAL,
                    subresource=subresource or None,
                    verb=verb,
                    namespace=namespace,
                    name=name,
                ),
            )
        )
        status = self._authz.create_subject_access_review(review).status
        return bool(status is not None and status.allowed)
