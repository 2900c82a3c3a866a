"""The real node's object store (ci/devcluster/objectstore.py): weed mini on loopback only, relayed into the
node's namespace, argo server there with it, and Argo's artifact repository pointing at it."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # `ci` is a top-level folder of the repo, not an installed package
    sys.path.insert(0, str(REPO))

from ci.devcluster import Settings, objectstore, realnode  # noqa: E402
from ci.devcluster.components import components  # noqa: E402
from ci.devcluster.manifests import argo_config  # noqa: E402
from ci.devcluster.state import PORT_NAMES, StateDir, pick_ports  # noqa: E402


def settings(tmp_path: Path, real: bool) -> Settings:
    return Settings.from_environ({"DIHERA_CACHE": str(tmp_path), "DIHERA_REAL_NODE": "1" if real else "0"})


def test_weed_mini_listens_on_loopback_ports_of_its_own_only(tmp_path: Path) -> None:
    assert set(objectstore.PORT_NAMES) <= set(PORT_NAMES)
    ports = pick_ports(30000)
    argv = objectstore.command(Path("/bin/weed"), tmp_path / "data", ports)
    flags = dict(a.removeprefix("-").split("=", 1) for a in argv[2:])
    assert argv[:2] == ["/bin/weed", "mini"] and flags["ip"] == flags["ip.bind"] == "127.0.0.1"
    assert {int(flags[f]) for f in objectstore.PORT_FLAGS.values()} == {ports[n] for n in objectstore.PORT_NAMES}
    # its listeners with fixed defaults are off or given a port: nothing binds where another cluster's might
    assert flags["s3.port.iceberg"] == flags["s3.port.lance"] == flags["admin.port.legacy"] == "0"
    assert flags["master.telemetry"] == "false" and flags["bucket"] == objectstore.BUCKET


def test_the_real_node_relays_the_store_and_runs_argo_server_in_its_namespace(tmp_path: Path) -> None:
    ports, state = pick_ports(30000), StateDir(tmp_path / "state")
    by_name = {c.name: c for c in components(settings(tmp_path, True), state, ports)}
    order = list(by_name)
    assert order.index("netns-forward") < order.index("objectstore") < order.index("argo-server")
    forwards = [a.removeprefix("-f=") for a in by_name["netns-forward"].argv if a.startswith("-f=")]
    ns = str(realnode.NETNS_PATH)
    assert f"{ns},{objectstore.ENDPOINT},host,127.0.0.1:{ports['store-s3']}" in forwards
    ui = f"127.0.0.1:{ports['argo-server']}"
    assert f"host,{ui},{ns},{ui}" in forwards
    server = by_name["argo-server"]
    assert server.netns == realnode.NETNS_PATH and server.env.items() >= objectstore.CREDENTIALS.items()
    assert by_name["objectstore"].netns is None and by_name["objectstore"].env == objectstore.CREDENTIALS
    assert objectstore.ENDPOINT.startswith(realnode.OBJECT_STORE_IP + ":")


def test_without_the_real_node_there_is_no_store_and_argo_server_stays_on_the_host(tmp_path: Path) -> None:
    by_name = {c.name: c for c in components(settings(tmp_path, False), StateDir(tmp_path / "s"), pick_ports(30000))}
    assert "objectstore" not in by_name and by_name["argo-server"].netns is None
    assert "artifactRepository" not in argo_config("http://x", object_store=False)


def test_argos_artifact_repository_is_the_store_with_every_log_archived() -> None:
    config = argo_config("http://127.0.0.1:1", object_store=True)
    repository = yaml.safe_load(config["artifactRepository"])
    assert repository["archiveLogs"] is True
    s3 = repository["s3"]
    assert (s3["endpoint"], s3["bucket"], s3["insecure"], s3["useSDKCreds"]) == (
        objectstore.ENDPOINT,
        objectstore.BUCKET,
        True,
        True,
    )
    executor = yaml.safe_load(config["executor"])
    env = {e["name"]: e["value"] for e in executor["env"]}
    assert env.items() >= objectstore.CREDENTIALS.items() and executor["image"].startswith("dihera.local/argoexec")
