"""Settings of the dev cluster: one object, built at the entry point."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["REAL_NODE_TOOLS", "TOOLS", "UI_TOOLS", "Settings", "argo_server_main", "read_versions"]

REPO = Path(__file__).resolve().parents[2]
VERSIONS_FILE = REPO / "ci" / "versions.env"

# Programs built by ci/build-tools.sh that the dev cluster runs.
TOOLS = (
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kwok",
    "workflow-controller",
    "local-path-provisioner",
)
# The Argo UI: argo server in a loopback main, for the pairs whose Argo major has one (v4; not v3).
UI_TOOLS = ("argo-server",)
# Programs of the real node (and of its images: pause, argoexec).
REAL_NODE_TOOLS = ("kubelet", "coredns", "netns-forward", "pause", "argoexec", "seaweedfs")
#: Where each cluster's loopback ports start: the default pair's, and any other pair's (2,000 higher: far more
#: than one cluster's ports, still below the ephemeral range, 32768 and up).
DEFAULT_PAIR_FIRST_PORT = 21000
OTHER_PAIR_FIRST_PORT = 23000


def read_versions(path: Path = VERSIONS_FILE) -> dict[str, str]:
    """The NAME=VALUE lines of ci/versions.env (the pinned versions ci/build-tools.sh builds)."""
    pairs = (line.split("=", 1) for line in path.read_text().splitlines() if "=" in line and not line.startswith("#"))
    return {name.strip(): value.strip().strip('"') for name, value in pairs}


def argo_server_main(argo_version: str, repo: Path = REPO) -> Path:
    """The loopback argo server main ci/build-tools.sh builds for this Argo version's major (may not exist)."""
    return repo / "ci" / "tools" / "argo" / argo_version.split(".")[0] / "server" / "main.go"


@dataclass(frozen=True)
class Settings:
    """Where things are, which Kubernetes and Argo versions run, and how big the simulated cluster is."""

    kubernetes_version: str
    argo_version: str
    repo: Path = REPO
    state_dir: Path = REPO / ".devcluster"
    cache_dir: Path = Path.home() / ".cache" / "dihera"
    kubectl: str = "kubectl"
    nodes: int = 4
    # Ports are picked upward from here, below Linux's ephemeral range; another pair's cluster starts higher
    # (OTHER_PAIR_FIRST_PORT), so `make test` runs the compat row's cluster beside the default one and
    # neither picks a port the other reserved but has not bound yet (the di-server's, Kueue's).
    first_port: int = DEFAULT_PAIR_FIRST_PORT
    path_env: str = "/usr/local/bin:/usr/bin:/bin"
    build_env: Mapping[str, str] = field(default_factory=dict)  # environment of ci/build-tools.sh (Go settings)
    real_node: bool = True  # a kubelet + containerd node beside kwok's (one per machine)
    argo_ui: bool = True  # argo server (API and UI) on 127.0.0.1; only where argo_server_main exists

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] = os.environ, state_dir: Path | None = None) -> Settings:
        """$DIHERA_KUBERNETES_VERSION / $DIHERA_ARGO_VERSION: the pair to run (default: ci/versions.env);
        $DIHERA_CACHE: where ci/build-tools.sh put the programs; $DIHERA_DEVCLUSTER_DIR: the state directory
        (default .devcluster/ for the default pair, .devcluster-<kubernetes>_<argo>/ for another pair);
        $DIHERA_DEVCLUSTER_FIRST_PORT: where its ports start (a third cluster beside the two rows' clusters);
        $DIHERA_REAL_NODE=0: no real node (kwok's simulated nodes only); $DIHERA_ARGO_UI=0: no argo server
        (a pair whose Argo major has no loopback argo server main, the compat pair's v3, runs none anyway)."""
        pinned = read_versions()
        kubernetes = environ.get("DIHERA_KUBERNETES_VERSION") or pinned["KUBERNETES_VERSION"]
        argo = environ.get("DIHERA_ARGO_VERSION") or pinned["ARGO_VERSION"]
        default_pair = (kubernetes, argo) == (pinned["KUBERNETES_VERSION"], pinned["ARGO_VERSION"])
        default_state = REPO / (".devcluster" if default_pair else f".devcluster-{kubernetes}_{argo}")
        cache, state = environ.get("DIHERA_CACHE"), environ.get("DIHERA_DEVCLUSTER_DIR")
        return cls(
            kubernetes_version=kubernetes,
            argo_version=argo,
            state_dir=state_dir or (Path(state).resolve() if state else default_state),
            cache_dir=Path(cache) if cache else Path(environ.get("HOME", str(Path.home()))) / ".cache" / "dihera",
            kubectl=environ.get("KUBECTL", "kubectl"),
            path_env=environ.get("PATH", cls.path_env),
            build_env=dict(environ),
            real_node=environ.get("DIHERA_REAL_NODE", "1") != "0",
            argo_ui=environ.get("DIHERA_ARGO_UI", "1") != "0" and argo_server_main(argo).is_file(),
            first_port=int(
                environ.get("DIHERA_DEVCLUSTER_FIRST_PORT")
                or (DEFAULT_PAIR_FIRST_PORT if default_pair else OTHER_PAIR_FIRST_PORT)
            ),
        )

    @property
    def tools(self) -> tuple[str, ...]:
        ui = UI_TOOLS if self.argo_ui else ()
        return TOOLS + ui + (REAL_NODE_TOOLS if self.real_node else ())

    @property
    def images_dir(self) -> Path:
        """Image archives built for the real node, named after a hash of their inputs."""
        return self.cache_dir / "images"

    @property
    def bin_dir(self) -> Path:
        return self.cache_dir / "bin"

    @property
    def pair_dir(self) -> Path:
        """Links to the programs of this (Kubernetes, Argo) pair; `ci/build-tools.sh --pair-dir` prints the same."""
        return self.cache_dir / "pairs" / f"{self.kubernetes_version}_{self.argo_version}"

    @property
    def build_command(self) -> list[str]:
        """ci/build-tools.sh building this pair's programs."""
        versions = ["--kubernetes", self.kubernetes_version, "--argo", self.argo_version]
        return ["bash", str(self.build_script), *versions, *self.tools]

    @property
    def argo_crd_dir(self) -> Path:
        return self.pair_dir / "argo-crds"

    @property
    def build_script(self) -> Path:
        return self.repo / "ci" / "build-tools.sh"

    @property
    def kwok_configs(self) -> list[Path]:
        return sorted((self.repo / "ci" / "kwok").glob("*.yaml"))

    def binary(self, name: str) -> Path:
        return self.pair_dir / name
