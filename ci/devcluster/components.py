"""Command lines of the control-plane processes, all bound to 127.0.0.1 (pure: no I/O)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from . import objectstore, realnode
from .manifests import ARGO_NAMESPACE, KWOK_NODE_ANNOTATION, STORAGE_NAMESPACE
from .settings import Settings
from .state import StateDir

__all__ = ["ARGO_UI_ENV", "POD_CIDR", "SERVICE_CIDR", "Component", "argo_ui_url", "components"]

SERVICE_CIDR = "10.96.0.0/16"
POD_CIDR = "10.244.0.0/16"  # addresses kwok writes into pod status; nothing is reachable there
SA_ISSUER = "https://kubernetes.default.svc.cluster.local"
#: The Argo UI opens pop-ups over its pages on a first visit and after an upgrade: none here.
ARGO_UI_ENV = {"FIRST_TIME_USER_MODAL": "false", "NEW_VERSION_MODAL": "false", "FEEDBACK_MODAL": "false"}


@dataclass(frozen=True)
class Component:
    """One process: its argv, extra environment, and the URL that answers 200 once it is ready."""

    name: str
    argv: list[str]
    health_url: str | None = None  # None: readiness is checked through the API (kwok: nodes Ready)
    health_ca: Path | None = None
    env: dict[str, str] = field(default_factory=dict)
    netns: Path | None = None  # run inside this network namespace (the real node's)

    @property
    def binary(self) -> Path:
        return Path(self.argv[0])


def _serving(state: StateDir, port: int) -> list[str]:
    pki = state.pki
    return [
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        f"--tls-cert-file={pki / 'serving.crt'}",
        f"--tls-private-key-file={pki / 'serving.key'}",
    ]


def _delegated(kubeconfig: Path) -> list[str]:
    return [
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--leader-elect=false",
        "--profiling=false",
    ]


def components(settings: Settings, state: StateDir, ports: dict[str, int]) -> list[Component]:
    """All processes, in start order."""
    real = _real_node(settings, state, ports) if settings.real_node else []
    ui = [_argo_server(settings, state, ports)] if settings.argo_ui else []
    return [*_control_plane(settings, state, ports), *real, *ui]


def argo_ui_url(ports: dict[str, int]) -> str:
    """Where argo server serves the Argo UI and its API (plain HTTP, loopback only)."""
    return f"http://127.0.0.1:{ports['argo-server']}"


def _argo_server(settings: Settings, state: StateDir, ports: dict[str, int]) -> Component:
    """Argo's API server and UI in the loopback main (ci/tools/argo/v4/server/main.go): `argo server
    --auth-mode=server --secure=false` bound to 127.0.0.1; it reads links and columns from Argo's ConfigMap.

    With the real node it runs inside the node's network namespace, where the object store's endpoint (the
    one Argo records in a Workflow's artifacts) is, reaching the API server on its loopback port there;
    netns-forward relays its port from the host's loopback (the same URL for the browser either way)."""
    url = argo_ui_url(ports)
    real = settings.real_node
    return Component(
        "argo-server",
        [
            str(settings.binary("argo-server")),
            f"--kubeconfig={state.component_kubeconfig('argo-server')}",
            f"--namespace={ARGO_NAMESPACE}",
            f"--address={url.removeprefix('http://')}",
            "--loglevel=info",
        ],
        health_url=f"{url}/api/v1/version",
        env={**ARGO_UI_ENV, **(objectstore.CREDENTIALS if real else {})},
        netns=realnode.NETNS_PATH if real else None,
    )


def _real_node(settings: Settings, state: StateDir, ports: dict[str, int]) -> list[Component]:
    """The real node: forwarders, the object store, then containerd, the kubelet and CoreDNS inside its network
    namespace."""
    files, binary, ns = realnode.node_files(state), settings.binary, realnode.NETNS_PATH
    relayed = [*realnode.forwards(ports["kube-apiserver"]), objectstore.forward(ports)]
    if settings.argo_ui:  # argo server runs in the namespace (_argo_server)
        relayed.append(f"host,127.0.0.1:{ports['argo-server']},{ns},127.0.0.1:{ports['argo-server']}")
    forwards = [f"-f={f}" for f in relayed]
    return [
        Component(
            "netns-forward", [str(binary("netns-forward")), *forwards, f"-connect={realnode.connect_proxy(files)}"]
        ),
        Component(
            "objectstore",
            objectstore.command(binary("seaweedfs"), state.root / "objectstore", ports),
            health_url=objectstore.health_url(ports),
            env=dict(objectstore.CREDENTIALS),
        ),
        Component("containerd", ["/usr/bin/containerd", f"--config={files.containerd_config}"], netns=ns),
        Component(
            "kubelet",
            [
                str(binary("kubelet")),
                f"--config={files.kubelet_config}",
                f"--kubeconfig={state.component_kubeconfig('kubelet')}",
                f"--root-dir={files.kubelet_root}",
                f"--hostname-override={realnode.NODE_NAME}",
                f"--node-ip={realnode.NODE_IP}",
                "--node-labels={}={}".format(*realnode.NODE_LABEL),
                "--v=1",
            ],
            netns=ns,
        ),
        Component("coredns", [str(binary("coredns")), f"-conf={files.corefile}"], netns=ns),
    ]


def _egress(settings: Settings, state: StateDir) -> list[str]:
    """With a real node, the API server dials nodes and pods through its network namespace's proxy."""
    return [f"--egress-selector-config-file={realnode.node_files(state).egress_config}"] if settings.real_node else []


def _control_plane(settings: Settings, state: StateDir, ports: dict[str, int]) -> list[Component]:
    pki, binary = state.pki, settings.binary
    etcd_url = f"http://127.0.0.1:{ports['etcd']}"
    peer_url = f"http://127.0.0.1:{ports['etcd-peer']}"
    ca = pki / "ca.crt"
    return [
        Component(
            "etcd",
            [
                str(binary("etcd")),
                "--name=dev",
                f"--data-dir={state.etcd_data}",
                f"--listen-client-urls={etcd_url}",
                f"--advertise-client-urls={etcd_url}",
                f"--listen-peer-urls={peer_url}",
                f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=dev={peer_url}",
                "--unsafe-no-fsync",
                "--log-level=warn",
            ],
            health_url=f"{etcd_url}/health",
        ),
        Component(
            "kube-apiserver",
            [
                str(binary("kube-apiserver")),
                f"--etcd-servers={etcd_url}",
                "--advertise-address=127.0.0.1",
                # Kubernetes >= 1.37 refuses a loopback address for the `kubernetes` Service's endpoints;
                # nothing here reaches the API server through that Service (simulated pods make no calls).
                "--endpoint-reconciler-type=none",
                *_serving(state, ports["kube-apiserver"]),
                f"--client-ca-file={ca}",
                "--authorization-mode=Node,RBAC",
                "--enable-admission-plugins=NodeRestriction",
                # logs, exec and port-forward reach the real node's kubelet, verified against the cluster CA
                f"--kubelet-client-certificate={pki / 'apiserver-kubelet-client.crt'}",
                f"--kubelet-client-key={pki / 'apiserver-kubelet-client.key'}",
                f"--kubelet-certificate-authority={ca}",
                "--kubelet-preferred-address-types=InternalIP",
                *_egress(settings, state),
                f"--service-account-issuer={SA_ISSUER}",
                f"--service-account-key-file={pki / 'sa.pub'}",
                f"--service-account-signing-key-file={pki / 'sa.key'}",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                "--allow-privileged=true",
                "--profiling=false",
                f"--audit-policy-file={state.audit_policy}",
                f"--audit-log-path={state.audit_log}",
                "--audit-log-format=json",
                "--audit-log-maxsize=200",
                "--audit-log-maxbackup=1",
            ],
            health_url=f"https://127.0.0.1:{ports['kube-apiserver']}/livez",
            health_ca=ca,
        ),
        Component(
            "kube-controller-manager",
            [
                str(binary("kube-controller-manager")),
                *_delegated(state.component_kubeconfig("kube-controller-manager")),
                *_serving(state, ports["kube-controller-manager"]),
                "--use-service-account-credentials=true",
                f"--service-account-private-key-file={pki / 'sa.key'}",
                f"--root-ca-file={ca}",
                f"--cluster-signing-cert-file={ca}",
                f"--cluster-signing-key-file={pki / 'ca.key'}",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
            ],
            health_url=f"https://127.0.0.1:{ports['kube-controller-manager']}/healthz",
            health_ca=ca,
        ),
        Component(
            "kube-scheduler",
            [
                str(binary("kube-scheduler")),
                *_delegated(state.component_kubeconfig("kube-scheduler")),
                *_serving(state, ports["kube-scheduler"]),
            ],
            health_url=f"https://127.0.0.1:{ports['kube-scheduler']}/healthz",
            health_ca=ca,
        ),
        Component(
            "kwok",
            [
                str(binary("kwok")),
                f"--kubeconfig={state.component_kubeconfig('kwok')}",
                *(f"--config={path}" for path in settings.kwok_configs),
                "--manage-nodes-with-annotation-selector={}={}".format(*KWOK_NODE_ANNOTATION),
                f"--node-ip={realnode.NODE_IP}",  # anything dialling a "kubelet" stays on loopback
                f"--cidr={POD_CIDR}",
                "--node-lease-duration-seconds=40",
            ],
        ),
        Component(  # started after kwok: its ConfigMap is read once, at start (ci/devcluster/manifests.py)
            "local-path-provisioner",
            [
                str(binary("local-path-provisioner")),
                "start",
                f"--kubeconfig={state.component_kubeconfig('local-path-provisioner')}",
                f"--namespace={STORAGE_NAMESPACE}",
                "--service-account-name=default",
            ],
        ),
        Component(
            "workflow-controller",
            [
                str(binary("workflow-controller")),
                f"--kubeconfig={state.component_kubeconfig('workflow-controller')}",
                f"--namespace={ARGO_NAMESPACE}",
                f"--health-address=127.0.0.1:{ports['workflow-controller']}",
                "--loglevel=info",
                # executor plugins on (ARGO_EXECUTOR_PLUGINS): a sweep with runner "plugin" runs its trials in
                # dihera's plugin, no pod per trial (dihera/sweeps/plugin.py); Argo loads a plugin from a
                # labelled ConfigMap of the Workflow's namespace
                "--executor-plugins",
            ],
            health_url=f"http://127.0.0.1:{ports['workflow-controller']}/healthz",
            # 1s instead of 10s between passes over a Workflow: short simulated pods progress quickly.
            # A pass may run 5 minutes instead of 30 s: a pass over a Workflow of thousands of replicas
            # spends most of 30 s on the running ones and then creates only a few pods before the
            # deadline, so a 2,000-replica job's pods came ever slower (docs/scaling.md, "Large jobs").
            # Self-reported progress ($ARGO_PROGRESS_FILE) reaches the Workflow every 5s instead of every minute
            # (the controller passes both ticks to the pods' executors; docs/argo-ui.md).
            env={
                "LEADER_ELECTION_DISABLE": "true",
                "DEFAULT_REQUEUE_TIME": "1s",
                # Argo's agent pod (HTTP and plugin nodes: a podless sweep's) at 1 CPU instead of 100m: it starts
                # (two Go processes) and relays a hundred trial nodes' calls without waiting on its quota
                "ARGO_AGENT_CPU_LIMIT": "1",
                "MAX_OPERATION_TIME": "300s",
                "ARGO_PROGRESS_PATCH_TICK_DURATION": "5s",
                "ARGO_PROGRESS_FILE_TICK_DURATION": "3s",
            },
        ),
    ]
