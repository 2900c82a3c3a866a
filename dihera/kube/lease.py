"""Leader election on a ``coordination.k8s.io`` Lease, as Kubernetes controllers do it: the Kubernetes
client's ``LeaderElection`` over its ``LeaseLock``, in a thread of its own.

One replica holds the Lease and renews it every ``retry_seconds``; the others try to take it every
``retry_seconds`` and do once its holder has not renewed it for ``lease_seconds`` (a replica that died:
within ``lease_seconds`` + ``retry_seconds``). A leader that cannot renew within ``renew_seconds`` stops
leading (``on_stopped``) before any other replica may take over. ``kubectl get lease -n <namespace>``
shows the holder. On a graceful stop the leader gives the Lease up (:meth:`LeaderElector.release`, as
client-go's ``ReleaseOnCancel``), so the next replica takes over at once instead of after the lease.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from kubernetes import client
from kubernetes.leaderelection import electionconfig, leaderelection
from kubernetes.leaderelection.resourcelock.leaselock import LeaseLock

__all__ = ["LIBRARY_LOGGER", "LeaderElector"]

log = logging.getLogger("dihera.kube")
#: The Kubernetes client's leader-election logger: it logs every renewal at INFO (every few seconds).
LIBRARY_LOGGER = "leaderelection"


class _Lock(LeaseLock):
    """A LeaseLock over a given API client that takes nothing once :attr:`closed` (the Lease was given up)."""

    def __init__(self, api: client.ApiClient, name: str, namespace: str, identity: str) -> None:
        super().__init__(name, namespace, identity)  # type: ignore[no-untyped-call]
        self.api_instance = client.CoordinationV1Api(api)
        self.closed = threading.Event()

    def create(self, name: str, namespace: str, election_record: object) -> bool:
        return False if self.closed.is_set() else bool(super().create(name, namespace, election_record))  # type: ignore[no-untyped-call]

    def update(self, name: str, namespace: str, updated_record: object) -> bool:
        return False if self.closed.is_set() else bool(super().update(name, namespace, updated_record))  # type: ignore[no-untyped-call]


class LeaderElector:
    """Campaigns for the Lease ``namespace/name`` as ``identity``: ``on_started()`` runs (in a thread of its
    own) once this replica leads; ``on_stopped()`` when it could not renew the Lease in time."""

    def __init__(
        self,
        api: client.ApiClient,
        namespace: str,
        name: str,
        identity: str,
        on_started: Callable[[], None],
        on_stopped: Callable[[], None],
        lease_seconds: int = 15,
        renew_seconds: int = 10,
        retry_seconds: int = 2,
    ) -> None:
        if not lease_seconds > renew_seconds > 1.2 * retry_seconds or retry_seconds < 1:
            raise ValueError(
                f"leader election needs lease > renew deadline > 1.2 x retry period >= 1.2 s, not "
                f"{lease_seconds} / {renew_seconds} / {retry_seconds} s"
            )
        self.namespace, self.name, self.identity = namespace, name, identity
        self._lock = _Lock(api, name, namespace, identity)
        self._leading = threading.Event()
        self._on_started = on_started
        self._on_stopped = on_stopped
        config = electionconfig.Config(  # type: ignore[no-untyped-call]
            self._lock, lease_seconds, renew_seconds, retry_seconds, self._started, self._stopped
        )
        self._election = leaderelection.LeaderElection(config)  # type: ignore[no-untyped-call]
        self._thread = threading.Thread(target=self._election.run, name="leader-election", daemon=True)

    def start(self) -> None:
        log.info("campaigning for the Lease %s/%s as %s", self.namespace, self.name, self.identity)
        self._thread.start()

    @property
    def alive(self) -> bool:
        """The election's thread runs (or has not started): a replica whose election died would never lead."""
        return self._thread.ident is None or self._thread.is_alive()

    @property
    def leading(self) -> bool:
        return self._leading.is_set()

    def _started(self) -> None:
        self._leading.set()
        log.info("leading: holds the Lease %s/%s as %s", self.namespace, self.name, self.identity)
        self._on_started()

    def _stopped(self) -> None:
        was = self._leading.is_set()
        self._leading.clear()
        if self._lock.closed.is_set():
            return  # given up on purpose (release)
        if was:
            log.error("lost the Lease %s/%s: could not renew it in time; stopping", self.namespace, self.name)
        self._on_stopped()

    def release(self) -> bool:
        """Give the Lease up if this replica holds it (nothing is renewed or taken after this). True if it did."""
        self._lock.closed.set()
        if not self._leading.is_set():
            return False
        self._leading.clear()
        try:
            lease = self._lock.api_instance.read_namespaced_lease(self.name, self.namespace)
            if lease.spec is None or lease.spec.holder_identity != self.identity:
                return False
            lease.spec.holder_identity = None  # a follower takes a Lease with no holder at once
            lease.spec.lease_duration_seconds = 1
            self._lock.api_instance.replace_namespaced_lease(self.name, self.namespace, lease)
        except Exception as err:  # the next holder takes over once the lease expires instead
            log.warning("could not give up the Lease %s/%s: %s", self.namespace, self.name, err)
            return False
        log.info("gave up the Lease %s/%s", self.namespace, self.name)
        return True
