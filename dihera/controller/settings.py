"""The controller's settings: one immutable object built at the entry point, passed explicitly."""

from __future__ import annotations

from dataclasses import dataclass, field

from dihera.queueing import KueueSettings
from dihera.render import RenderSettings

__all__ = ["ControllerSettings", "LeaderElection"]


@dataclass(frozen=True)
class LeaderElection:
    """The Lease the controller replicas share (``namespace/name``), as Kubernetes controllers elect their
    leader (:mod:`dihera.kube.lease`): the holder renews it every ``retry_seconds``, gives it up when it cannot
    within ``renew_seconds``, and another replica takes it ``lease_seconds`` after its last renewal."""

    namespace: str
    name: str = "dihera-controller"
    lease_seconds: int = 15
    renew_seconds: int = 10
    retry_seconds: int = 2

    def __post_init__(self) -> None:
        if not self.lease_seconds > self.renew_seconds > 1.2 * self.retry_seconds or self.retry_seconds < 1:
            raise ValueError(
                "--leader-elect-lease-duration > --leader-elect-renew-deadline > 1.2 x --leader-elect-retry-period"
                f" >= 1.2 s must hold, not {self.lease_seconds} > {self.renew_seconds} > 1.2 x {self.retry_seconds}"
            )


@dataclass(frozen=True)
class ControllerSettings:
    """How ``dihera controller`` runs.

    ``namespaces`` are names or patterns (``team-*``, ``!dihera-test-*``); empty with ``all_namespaces``
    watches the whole cluster. Endpoints listen on ``bind_address``: ``/metrics`` and ``/readyz`` on
    ``metrics_port``, the liveness ``/healthz`` on ``health_port`` (0 disables an endpoint).
    ``leader_election``: the Lease the replicas share, only its holder acts (None: standalone, one
    instance); ``identity`` names this replica in it and the logs (None: host name and process id).
    """

    kubeconfig: str | None = None
    context: str | None = None
    namespaces: tuple[str, ...] = ()
    all_namespaces: bool = False
    render: RenderSettings = field(default_factory=RenderSettings)
    leader_election: LeaderElection | None = None
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
