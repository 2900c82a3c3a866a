"""The dev cluster's kwok nodes: the four of every cluster-up, and larger ones added for a large job."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # `ci` is a top-level folder of the repo, not an installed package
    sys.path.insert(0, str(REPO))

from ci.devcluster.manifests import KWOK_NODE_ANNOTATION, nodes  # noqa: E402


def test_cluster_up_nodes_keep_kwoks_default_size() -> None:
    made = nodes(4)
    assert [n["metadata"]["name"] for n in made] == [f"kwok-node-{i}" for i in range(4)]
    for node in made:
        annotations = node["metadata"]["annotations"]
        assert annotations[KWOK_NODE_ANNOTATION[0]] == KWOK_NODE_ANNOTATION[1]
        assert "sim.dihera.io/pods" not in annotations  # ci/kwok/nodes.yaml's default: 110


def test_added_nodes_are_numbered_apart_and_sized_by_the_annotation_kwok_reads() -> None:
    made = nodes(3, first=100, pods=1000)
    assert [n["metadata"]["name"] for n in made] == ["kwok-node-100", "kwok-node-101", "kwok-node-102"]
    assert {n["metadata"]["annotations"]["sim.dihera.io/pods"] for n in made} == {"1000"}
    stages = list(yaml.safe_load_all((REPO / "ci" / "kwok" / "nodes.yaml").read_text()))
    template = next(s for s in stages if s["metadata"]["name"] == "node-initialize")["spec"]["next"]["statusTemplate"]
    assert 'index $a "sim.dihera.io/pods"' in template  # the annotation kwok sizes a node's pods from


def test_argos_configmap_holds_the_ui_columns_and_links_to_the_reserved_di_server_port() -> None:
    from ci.devcluster.manifests import argo_objects
    from ci.devcluster.state import PORT_NAMES, di_server_url
    from dihera.argo_ui import argo_config

    assert "di-server" in PORT_NAMES
    url = di_server_url({"di-server": 21006})
    assert url == "https://127.0.0.1:21006"
    (configmap,) = [o for o in argo_objects(url) if o["kind"] == "ConfigMap"]
    data = configmap["data"]
    assert {k: yaml.safe_load(data[k]) for k in ("columns", "links")} == argo_config(url)
    assert all(link["url"].startswith("https://127.0.0.1:21006/ui/") for link in yaml.safe_load(data["links"]))
    assert yaml.safe_load(data["metricsConfig"]) == {"enabled": False}  # the rest is kept


def test_the_workflow_controller_passes_a_short_progress_tick_to_pods() -> None:
    from ci.devcluster.components import components
    from ci.devcluster.settings import Settings
    from ci.devcluster.state import PORT_NAMES, StateDir

    settings = Settings(kubernetes_version="v1", argo_version="v2", real_node=False)
    ports = {name: 21000 + i for i, name in enumerate(PORT_NAMES)}
    (controller,) = [
        c for c in components(settings, StateDir(Path("/nonexistent")), ports) if c.name == "workflow-controller"
    ]
    assert controller.env["ARGO_PROGRESS_PATCH_TICK_DURATION"] == "5s"
    assert controller.env["ARGO_PROGRESS_FILE_TICK_DURATION"] == "3s"


def test_a_state_from_before_the_di_server_port_gets_one_and_keeps_the_others(tmp_path: Path) -> None:
    import json

    from ci.devcluster.state import PORT_NAMES, StateDir

    old = {name: 30000 + i for i, name in enumerate(PORT_NAMES) if name != "di-server"}
    (tmp_path / "ports.json").write_text(json.dumps(old))
    ports = StateDir(tmp_path).load_ports()
    assert ports is not None and {k: ports[k] for k in old} == old
    assert ports["di-server"] > max(old.values())
    assert json.loads((tmp_path / "ports.json").read_text()) == ports
    (tmp_path / "ports.json").write_text(json.dumps({**old, "gone": 1}))
    assert StateDir(tmp_path).load_ports() is None
