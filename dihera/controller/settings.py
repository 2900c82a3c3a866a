"""The controller's settings: one immutable object built at the entry point, passed explicitly."""

from __future__ import annotations

from dataclasses import dataclass, field

from dihera.queueing import KueueSettings
from dihera.render import RenderSettings

__all__ = ["MIN_PEERING_LIFETIME", "ControllerSettings"]

MIN_PEERING_LIFETIME = 5


@dataclass(frozen=True)
class ControllerSettings:
    """How ``dihera controller`` runs.

    ``namespaces`` are kopf namespace patterns (``team-*``, ``!dihera-test-*``); empty with
    ``all_namespaces`` watches the whole cluster. Endpoints listen on ``bind_address``:
    ``/metrics`` and ``/readyz`` on ``metrics_port``, kopf's liveness ``/healthz`` on ``health_port``
    (0 disables an endpoint). With ``standalone`` the controller skips peering; otherwise
    replicas sharing ``peering`` elect one active instance by ``priority`` (higher wins).
    ``peering_lifetime`` is how long (seconds) a replica's keep-alive in the peering object counts:
    a replica that died without leaving is taken over by the next one within that time.
    ``identity`` names the replica in the peering object and the logs (None: kopf's ``user@host/...``).
    """

    kubeconfig: str | None = None
    context: str | None = None
    namespaces: tuple[str, ...] = ()
    all_namespaces: bool = False
    render: RenderSettings = field(default_factory=RenderSettings)
    peering: str = "dihera"
    standalone: bool = False
    priority: int = 0
    peering_lifetime: int = 60
    identity: str | None = None
    bind_address: str = "127.0.0.1"
    metrics_port: int = 8080
    health_port: int = 8081
    workers: int = 16
    retry_delays: tuple[float, ...] = (1.0, 2.0, 5.0, 10.0, 30.0)
    #: Seconds a pod's event waits before its job's pass, so a burst of pod events makes one pass and one
    #: status write (the Kubernetes Job controller batches pod events for 1 s); 0: at once.
    pod_batch_seconds: float = 0.5
    #: Seconds between two status writes of a job that only report progress (pod counts): the pass then
    #: due writes the values of its time; phase changes, events and drops are written at once; 0: none.
    progress_batch_seconds: float = 1.0
    #: Seconds between sweeps of the watch cache (:mod:`dihera.controller.resync`); 0: none.
    resync_seconds: float = 300.0
    #: Queue DIJobs labelled ``kueue.x-k8s.io/queue-name`` with Kueue (docs/queueing.md); None: the label is
    #: ignored and Workloads are not watched (Kueue's CRDs need not exist).
    kueue: KueueSettings | None = None

    def __post_init__(self) -> None:
        if not self.namespaces and not self.all_namespaces:
            raise ValueError("the controller needs --namespace NS (repeatable) or --all-namespaces")
        if self.namespaces and self.all_namespaces:
            raise ValueError("--namespace and --all-namespaces exclude each other")
        if self.pod_batch_seconds < 0:
            raise ValueError(f"--pod-batch-seconds must be 0 or more, not {self.pod_batch_seconds}")
        if self.progress_batch_seconds < 0:
            raise ValueError(f"--progress-batch-seconds must be 0 or more, not {self.progress_batch_seconds}")
        if self.peering_lifetime < MIN_PEERING_LIFETIME:
            # kopf renews the keep-alive 5-10 s before it expires (at least every second): shorter would flap
            raise ValueError(f"--peering-lifetime must be at least {MIN_PEERING_LIFETIME} seconds")
