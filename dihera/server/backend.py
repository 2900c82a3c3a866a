"""What the di-server needs from the cluster, as one small interface; the real one over dihera.kube."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

from dihera.constants import LABEL_EXPERIMENT, LABEL_TRIAL_POD
from dihera.kube.auth import Authenticator, Identity
from dihera.kube.key_annotations import AnnotationKeyStore
from dihera.kube.profilings import write_profilings
from dihera.kube.scale_executor import JobScaler
from dihera.kube.snapshot import JobSnapshot
from dihera.kube.training import write_training
from dihera.kube.watch import Scopes, Store, Watches
from dihera.kube.workloads import QuotaGate, WorkloadStore
from dihera.naming import membership_configmap_name
from dihera.render.settings import RenderSettings
from dihera.scaling import ScaleRequest
from dihera.scaling.executor import ScaleResult
from dihera.server.idempotency import KeyStore
from dihera.server.settings import ServerSettings

if TYPE_CHECKING:
    from kubernetes import client

__all__ = ["WATCHED", "Backend", "KubeBackend"]

#: What the di-server watches in every namespace it serves: the jobs, their memberships and pods.
WATCHED = ("DIJob", "ConfigMap", "Pod")


class Backend(Protocol):
    """Reads come from a cache; scaling and profiling writes go to the API server."""

    def ready(self) -> bool: ...

    def job(self, namespace: str, name: str) -> JobSnapshot | None: ...

    def trial_job(self, namespace: str, pod: str) -> str | None:
        """The name of the DIJob a sweep's trial pod created (labelled ``diengine/trial-pod``), if cached."""
        ...

    def experiment_jobs(self, namespace: str, experiment: str) -> list[dict[str, object]]:
        """The cached DIJobs of a sweep (labelled ``diengine/experiment``), in name order."""
        ...

    def scale(self, namespace: str, name: str, request: ScaleRequest) -> ScaleResult: ...

    def record_profilings(self, namespace: str, name: str, data: Mapping[str, object]) -> bool:
        """Merge a report (within bounds: :func:`dihera.profilings.report_problems`) into the DIJob's
        ``status.profilings``; :class:`~dihera.profilings.ProfilingsError` when the merged map would be past
        its bounds; False when the DIJob does not exist."""
        ...

    def write_training(self, namespace: str, name: str, uid: str, training: Mapping[str, object]) -> bool:
        """Write ``status.training`` of the DIJob ``uid`` (:mod:`dihera.server.training` decides when); False
        when that DIJob is gone."""
        ...

    def authenticate(self, token: str) -> Identity | None:
        """TokenReview (blocking; the server caches the answer)."""
        ...

    @property
    def keys(self) -> KeyStore:
        """Where ``Idempotency-Key`` answers are remembered."""
        ...

    def allowed(self, identity: Identity, verb: str, namespace: str, name: str, subresource: str = "") -> bool:
        """SubjectAccessReview of ``verb`` on the DIJob (or on its ``subresource``), blocking; the server
        caches the answer."""
        ...


class KubeBackend:
    """The cluster through one API client: the watch layer's store (DIJobs, membership ConfigMaps, pods),
    TokenReview/SAR, JobScaler, keys on the DIJob."""

    def __init__(self, api: client.ApiClient, settings: ServerSettings) -> None:
        self._api = api
        self._store = Store()
        self._watches = Watches(api, self._store, Scopes(settings.namespaces), WATCHED)
        self._auth = Authenticator(api)
        quota = QuotaGate(WorkloadStore(api), settings.kueue) if settings.kueue is not None else None
        self._scaler = JobScaler(api, RenderSettings(cluster_domain=settings.cluster_domain), quota=quota)
        self._keys = AnnotationKeyStore(api, ttl=settings.idempotency_seconds)

    @property
    def keys(self) -> KeyStore:
        """On the DIJob: shared by every replica of the di-server."""
        return self._keys

    def start(self) -> KubeBackend:
        self._watches.start()
        return self

    def stop(self) -> None:
        self._watches.close()

    def wait_ready(self, timeout: float) -> bool:
        return self._watches.wait_synced(timeout)

    def ready(self) -> bool:
        return self._watches.synced()

    def job(self, namespace: str, name: str) -> JobSnapshot | None:
        body = self._store.get("DIJob", namespace, name)
        if body is None:
            return None
        configmap = self._store.get("ConfigMap", namespace, membership_configmap_name(name))
        return JobSnapshot(body, configmap, tuple(self._store.pods(namespace, name)))

    def trial_job(self, namespace: str, pod: str) -> str | None:
        found = self._store.labelled("DIJob", namespace, LABEL_TRIAL_POD, pod)
        return str(found[0]["metadata"]["name"]) if found else None

    def experiment_jobs(self, namespace: str, experiment: str) -> list[dict[str, object]]:
        return self._store.labelled("DIJob", namespace, LABEL_EXPERIMENT, experiment)

    def scale(self, namespace: str, name: str, request: ScaleRequest) -> ScaleResult:
        return self._scaler.scale(namespace, name, request)

    def record_profilings(self, namespace: str, name: str, data: Mapping[str, object]) -> bool:
        return write_profilings(self._api, namespace, name, data, self._store.get("DIJob", namespace, name))

    def write_training(self, namespace: str, name: str, uid: str, training: Mapping[str, object]) -> bool:
        return write_training(self._api, namespace, name, uid, training)

    def authenticate(self, token: str) -> Identity | None:
        return self._auth.authenticate(token)

    def allowed(self, identity: Identity, verb: str, namespace: str, name: str, subresource: str = "") -> bool:
        return self._auth.allowed(identity, verb, namespace, name, subresource)
