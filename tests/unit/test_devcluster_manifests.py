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
