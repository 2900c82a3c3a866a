"""What the di-server needs from the cluster, as one small interface; the real one over dihera.kube."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from dihera.kube.auth import Authenticator, Identity
from dihera.kube.cache import CachedJob, JobCache
from dihera.kube.idempotency import AnnotationKeyStore
from dihera.kube.profilings import write_profilings
from dihera.kube.scale_executor import JobScaler, ScaleResult
from dihera.kube.workloads import QuotaGate, WorkloadStore
from dihera.render.settings import RenderSettings
from dihera.scaling import ScaleRequest
from dihera.server.idempotency import KeyStore
from dihera.server.settings import ServerSettings

if TYPE_CHECKING:
    from kubernetes import client

__all__ = ["Backend", "KubeBackend"]


class Backend(Protocol):
    """Reads come from a cache; scaling and profiling writes go to the API server."""

    def ready(self) -> bool: ...

    def job(self, namespace: str, name: str) -> CachedJob | None: ...

    def scale(self, namespace: str, name: str, request: ScaleRequest) -> ScaleResult: ...

    def record_profilings(self, namespace: str, name: str, data: Mapping[str, Any]) -> bool: ...

    def authenticate(self, token: str) -> Identity | None:
        """TokenReview (blocking; the server caches the answer)."""
        ...

    @property
    def keys(self) -> KeyStore:
        """Where ``Idempotency-Key`` answers are remembered."""
        ...

    def allowed(self, identity: Identity, verb: str, namespace: str, name: str) -> bool:
        """SubjectAccessReview (blocking; the server caches the answer)."""
        ...


class KubeBackend:
    """The cluster through one API client: a watch-backed JobCache, TokenReview/SAR, JobScaler, keys on the DIJob."""

    def __init__(self, api: client.ApiClient, settings: ServerSettings) -> None:
        self._api = api
        self._cache = JobCache(api, settings.namespaces)
        self._auth = Authenticator(api)
        quota = QuotaGate(WorkloadStore(api), settings.kueue) if settings.kueue is not None else None
        self._scaler = JobScaler(api, RenderSettings(cluster_domain=settings.cluster_domain), quota=quota)
        self._keys = AnnotationKeyStore(api, ttl=settings.idempotency_seconds)

    @property
    def keys(self) -> KeyStore:
        """On the DIJob: shared by every replica of the di-server."""
        return self._keys

    def start(self) -> KubeBackend:
        self._cache.start()
        return self

    def stop(self) -> None:
        self._cache.stop()

    def wait_ready(self, timeout: float) -> bool:
        return self._cache.wait_ready(timeout)

    def ready(self) -> bool:
        return self._cache.ready()

    def job(self, namespace: str, name: str) -> CachedJob | None:
        return self._cache.job(namespace, name)

    def scale(self, namespace: str, name: str, request: ScaleRequest) -> ScaleResult:
        return self._scaler.scale(namespace, name, request)

    def record_profilings(self, namespace: str, name: str, data: Mapping[str, Any]) -> bool:
        return write_profilings(self._api, namespace, name, data)

    def authenticate(self, token: str) -> Identity | None:
        return self._auth.authenticate(token)

    def allowed(self, identity: Identity, verb: str, namespace: str, name: str) -> bool:
        return self._auth.allowed(identity, verb, namespace, name)
