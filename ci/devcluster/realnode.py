"""The real node's configuration files and command lines (pure: no I/O).

The real node is a kubelet with containerd, runc, the CNI bridge plugin and CoreDNS, all inside one
network namespace of its own (NETNS). That namespace has no route out: pods reach one another on the
bridge, the API server through NETNS's API_SERVICE_IP (the `kubernetes` Service address) and CoreDNS
on DNS_SERVICE_IP, both local addresses of NETNS. `netns-forward` relays the API server's port from the
host's loopback into NETNS, and the other way an HTTP CONNECT proxy on a unix socket (the API server's
egress selector) dials the kubelet (NODE_IP) and pods inside NETNS: the two meet nowhere else.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .state import StateDir

__all__ = [
    "API_SERVICE_IP",
    "DNS_SERVICE_IP",
    "NETNS",
    "NETNS_PATH",
    "NODE_LABEL",
    "NODE_NAME",
    "NODE_TAINT",
    "OBJECT_STORE_IP",
    "PAUSE_IMAGE",
    "POD_SUBNET",
    "NodeFiles",
    "cni_config",
    "containerd_config",
    "corefile",
    "kubelet_config",
    "node_files",
    "render",
]

NODE_NAME = "dihera-real-node"
NETNS = "dihera-node"
NETNS_PATH = Path("/run/netns") / NETNS
BRIDGE = "dihera0"
NODE_SUBNET = "10.213.0.0/16"  # nothing else on the machine uses it; it exists only inside NETNS
POD_SUBNET = "10.213.0.0/24"  # the bridge's
NODE_IP = "10.213.1.1"  # the node's InternalIP, where the kubelet listens (the kubelet refuses loopback)
KUBELET_PORT = 10250
API_SERVICE_IP = "10.96.0.1"  # first address of the service range: the `kubernetes` Service
DNS_SERVICE_IP = "10.96.0.10"  # the kubelet's clusterDNS; CoreDNS binds it inside NETNS
OBJECT_STORE_IP = "10.213.1.2"  # the object store's S3 endpoint (ci/devcluster/objectstore.py), relayed
# NODE_IP, OBJECT_STORE_IP and both Service IPs are addresses of NETNS's loopback device: pods reach them
# through the bridge.
# Real workloads tolerate the taint and select the label; everything else lands on kwok's nodes.
NODE_LABEL = ("dihera.io/real-node", "true")
NODE_TAINT = {"key": "dihera.io/real-node", "value": "true", "effect": "NoSchedule"}
PAUSE_IMAGE = "dihera.local/pause:1"
CONTAINERD_NAMESPACE = "k8s.io"  # the containerd namespace the CRI plugin uses


@dataclass(frozen=True)
class NodeFiles:
    """Where the real node keeps its configuration and data, all under the state directory."""

    root: Path

    @property
    def containerd_root(self) -> Path:
        return self.root / "containerd"

    @property
    def containerd_state(self) -> Path:
        return self.root / "containerd-state"

    @property
    def containerd_socket(self) -> Path:
        return self.containerd_state / "containerd.sock"

    @property
    def containerd_config(self) -> Path:
        return self.root / "containerd.toml"

    @property
    def cni_conf_dir(self) -> Path:
        return self.root / "cni"

    @property
    def cni_data_dir(self) -> Path:
        return self.root / "cni-ipam"

    @property
    def kubelet_root(self) -> Path:
        return self.root / "kubelet"

    @property
    def kubelet_config(self) -> Path:
        return self.root / "kubelet.yaml"

    @property
    def resolv_conf(self) -> Path:
        return self.root / "resolv.conf"

    @property
    def corefile(self) -> Path:
        return self.root / "Corefile"

    @property
    def egress_config(self) -> Path:
        return self.root / "egress-selector.yaml"

    @property
    def egress_socket(self) -> Path:
        return self.root / "egress.sock"


def node_files(state: StateDir) -> NodeFiles:
    return NodeFiles(state.root / "node")


def containerd_config(files: NodeFiles) -> str:
    """containerd 1.6 (config version 2): its own root, state and socket; CRI with runc on cgroupfs."""
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    # restrict_oom_score_adj: runc cannot raise oom_score_adj without CAP_SYS_RESOURCE (see the reference).
    # The opt plugin would create /opt/containerd; the stream server (exec, logs) binds loopback in NETNS.
    return f"""version = 2
root = "{files.containerd_root}"
state = "{files.containerd_state}"
disabled_plugins = [
  "io.containerd.internal.v1.opt",
  "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.zfs",
  "io.containerd.tracing.processor.v1.otlp",
]

[grpc]
  address = "{files.containerd_socket}"

[{cri}]
  sandbox_image = "{PAUSE_IMAGE}"
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false

[{cri}.containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"

[{cri}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[{cri}.containerd.runtimes.runc.options]
  SystemdCgroup = false

[{cri}.cni]
  bin_dir = "/usr/lib/cni"
  conf_dir = "{files.cni_conf_dir}"
"""


def cni_config(files: NodeFiles) -> str:
    """A bridge inside NETNS, addresses from POD_SUBNET, its first address the pods' gateway; no masquerade."""
    config = {
        "cniVersion": "0.4.0",
        "name": "dihera",
        "plugins": [
            {
                "type": "bridge",
                "bridge": BRIDGE,
                "isGateway": True,
                "ipMasq": False,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": POD_SUBNET}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                    "dataDir": str(files.cni_data_dir),
                },
            }
        ],
    }
    return json.dumps(config, indent=2) + "\n"


def kubelet_config(files: NodeFiles, state: StateDir) -> str:
    """KubeletConfiguration (JSON is YAML): cgroup v1 allowed, cgroupfs, webhook authn/authz, and no disk reclaim.

    The node's images are imported into containerd and can never be pulled again (``dihera.local/...``), so the
    kubelet must never delete one: image GC is off (``imageGCHighThresholdPercent`` 100), and so are the disk
    eviction thresholds (``0%``: the kubelet ignores the signal). With them on (even at 1 %), a machine whose disk
    ran low (a cold run wrote the 5.4 GiB DI-engine image beside the caches) had the eviction manager reclaim disk
    by deleting the unused images, the sandbox image among them: every later pod failed "failed to get sandbox
    image dihera.local/pause:1". containerd 1.6.20 (Debian 12's) knows no pinned images (``io.cri-containerd.pinned``
    came in 1.6.2x), so pinning is no way out here.
    """
    pki = state.pki
    config = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "failCgroupV1": False,  # 1.35 refuses cgroup v1 otherwise
        "cgroupDriver": "cgroupfs",
        "containerRuntimeEndpoint": f"unix://{files.containerd_socket}",
        "failSwapOn": False,
        "address": NODE_IP,
        "port": KUBELET_PORT,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "clusterDomain": "cluster.local",
        "clusterDNS": [DNS_SERVICE_IP],
        "resolvConf": str(files.resolv_conf),
        "tlsCertFile": str(pki / "serving.crt"),  # its SANs include NODE_IP
        "tlsPrivateKeyFile": str(pki / "serving.key"),
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": str(pki / "ca.crt")},
        },
        "authorization": {"mode": "Webhook"},
        "registerWithTaints": [NODE_TAINT],
        "evictionHard": {"memory.available": "100Mi", "nodefs.available": "0%", "imagefs.available": "0%"},
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "serializeImagePulls": False,
        "maxPods": 40,
        "nodeStatusUpdateFrequency": "4s",
        "shutdownGracePeriod": "0s",
    }
    return json.dumps(config, indent=2) + "\n"


def corefile(kubeconfig: Path) -> str:
    """cluster.local only (pods resolve nothing else), on DNS_SERVICE_IP inside NETNS."""
    return f"""cluster.local:53 {{
    bind {DNS_SERVICE_IP}
    errors
    cache 5
    kubernetes cluster.local {{
        kubeconfig {kubeconfig}
        pods insecure
        ttl 5
    }}
}}
"""


def resolv_conf() -> str:
    """The node's upstream resolv.conf as the kubelet sees it: CoreDNS only."""
    return f"nameserver {DNS_SERVICE_IP}\n"


def forwards(api_port: int) -> list[str]:
    """netns-forward's -f arguments: the API server into NETNS, on loopback and on the Service IP."""
    ns, api = str(NETNS_PATH), f"127.0.0.1:{api_port}"
    return [f"{ns},127.0.0.1:{api_port},host,{api}", f"{ns},{API_SERVICE_IP}:443,host,{api}"]


def connect_proxy(files: NodeFiles) -> str:
    """netns-forward's -connect argument: NODE_SUBNET dialled in NETNS, loopback on the host."""
    return f"{files.egress_socket},{NETNS_PATH},{NODE_SUBNET}"


def egress_selector(files: NodeFiles) -> str:
    """The API server dials nodes and pods (logs, exec, port-forward, proxy) through the CONNECT proxy."""
    config = {
        "apiVersion": "apiserver.k8s.io/v1beta1",
        "kind": "EgressSelectorConfiguration",
        "egressSelections": [
            {
                "name": "cluster",
                "connection": {
                    "proxyProtocol": "HTTPConnect",
                    "transport": {"uds": {"udsName": str(files.egress_socket)}},
                },
            }
        ],
    }
    return json.dumps(config, indent=2) + "\n"


def render(state: StateDir) -> dict[Path, str]:
    """Every configuration file of the real node, by path."""
    files = node_files(state)
    return {
        files.containerd_config: containerd_config(files),
        files.cni_conf_dir / "10-dihera.conflist": cni_config(files),
        files.kubelet_config: kubelet_config(files, state),
        files.resolv_conf: resolv_conf(),
        files.corefile: corefile(state.component_kubeconfig("coredns")),
        files.egress_config: egress_selector(files),
    }
