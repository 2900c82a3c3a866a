"""A real local control plane for tests and the demo.

etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok (simulated nodes and pod
lifecycles, see ci/kwok/) and Argo's workflow-controller, all on 127.0.0.1, with their state in
.devcluster/. Run ``python -m ci.devcluster up|down|status`` (or ``make cluster-up`` ...).
"""

from .cluster import Cluster, ClusterError
from .settings import Settings

__all__ = ["Cluster", "ClusterError", "Settings"]
