"""The real node's configuration (pure rendering) and the docker-archive writer of ci/devcluster."""

from __future__ import annotations

import hashlib
import json
import sys
import tarfile
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from ci.devcluster import images, realnode  # noqa: E402
from ci.devcluster.state import StateDir  # noqa: E402


def rendered(tmp_path: Path) -> dict[str, str]:
    return {p.name: text for p, text in realnode.render(StateDir(tmp_path)).items()}


def test_containerd_runs_runc_without_raising_oom_scores(tmp_path: Path) -> None:
    config = tomllib.loads(rendered(tmp_path)["containerd.toml"])
    cri = config["plugins"]["io.containerd.grpc.v1.cri"]
    assert cri["restrict_oom_score_adj"] is True
    assert cri["sandbox_image"] == realnode.PAUSE_IMAGE
    assert cri["stream_server_address"] == "127.0.0.1"
    assert cri["containerd"]["runtimes"]["runc"]["options"]["SystemdCgroup"] is False
    assert config["grpc"]["address"].startswith(str(tmp_path))
    assert "io.containerd.internal.v1.opt" in config["disabled_plugins"]  # it would write /opt/containerd


def test_kubelet_serves_inside_the_node_namespace_with_the_taint(tmp_path: Path) -> None:
    config = json.loads(rendered(tmp_path)["kubelet.yaml"])
    assert (config["address"], config["healthzBindAddress"]) == (realnode.NODE_IP, "127.0.0.1")
    assert config["readOnlyPort"] == 0
    assert config["failCgroupV1"] is False
    assert config["clusterDNS"] == [realnode.DNS_SERVICE_IP]
    assert config["registerWithTaints"] == [realnode.NODE_TAINT]
    assert config["authentication"]["anonymous"]["enabled"] is False


def test_bridge_stays_in_the_pod_subnet_without_masquerade(tmp_path: Path) -> None:
    bridge = json.loads(rendered(tmp_path)["10-dihera.conflist"])["plugins"][0]
    assert (bridge["type"], bridge["isGateway"], bridge["ipMasq"]) == ("bridge", True, False)
    assert bridge["ipam"]["ranges"] == [[{"subnet": realnode.POD_SUBNET}]]


def test_corefile_serves_cluster_local_only(tmp_path: Path) -> None:
    corefile = rendered(tmp_path)["Corefile"]
    assert corefile.startswith("cluster.local:53 {")
    assert f"bind {realnode.DNS_SERVICE_IP}" in corefile
    assert "forward" not in corefile


def test_forwards_join_the_namespace_and_the_host_on_loopback() -> None:
    ns = str(realnode.NETNS_PATH)
    assert realnode.forwards(21002) == [
        f"{ns},127.0.0.1:21002,host,127.0.0.1:21002",
        f"{ns},{realnode.API_SERVICE_IP}:443,host,127.0.0.1:21002",
    ]


def test_api_server_dials_nodes_through_the_namespace_proxy(tmp_path: Path) -> None:
    files = realnode.node_files(StateDir(tmp_path))
    selection = json.loads(rendered(tmp_path)["egress-selector.yaml"])["egressSelections"]
    assert selection == [
        {
            "name": "cluster",
            "connection": {"proxyProtocol": "HTTPConnect", "transport": {"uds": {"udsName": str(files.egress_socket)}}},
        }
    ]
    assert realnode.connect_proxy(files) == f"{files.egress_socket},{realnode.NETNS_PATH},{realnode.NODE_SUBNET}"


def test_docker_archive_names_its_layer_by_digest(tmp_path: Path) -> None:
    layer = tmp_path / "layer.tar"
    with tarfile.open(layer, "w") as tar:
        tar.add(__file__, arcname="hello.py")
    out = tmp_path / "image.tar"
    images.write_docker_archive(out, "dihera.local/x:1", layer, {"Cmd": ["true"]})
    with tarfile.open(out) as archive:
        manifest = json.load(archive.extractfile("manifest.json"))  # type: ignore[arg-type]
        config = json.load(archive.extractfile(manifest[0]["Config"]))  # type: ignore[arg-type]
        packed = archive.extractfile(manifest[0]["Layers"][0]).read()  # type: ignore[union-attr]
    assert manifest[0]["RepoTags"] == ["dihera.local/x:1"]
    assert config["rootfs"]["diff_ids"] == [f"sha256:{hashlib.sha256(layer.read_bytes()).hexdigest()}"]
    assert packed == layer.read_bytes()
    assert config["config"] == {"Cmd": ["true"]}
