"""`dihera submit` of a file holding a DIJob and its companion ConfigMap, on a real API server."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from kubernetes import client

from dihera.cli import main
from dihera.kube.jobs import JobStore

pytestmark = pytest.mark.cluster

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "companions"


@pytest.mark.parametrize("name", ["atari-dqn-config.yaml", "cartpole-config-first.yaml"])
def test_submit_applies_the_companions_then_the_dijob(dijob_crd: None, cluster: client.ApiClient, kubeconfig: Path,
                                                      namespace: str, name: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    path = FIXTURES / name
    docs = list(yaml.safe_load_all(path.read_text()))
    (config,) = [d for d in docs if d["kind"] == "ConfigMap"]
    (dijob,) = [d for d in docs if d["kind"] == "DIJob"]
    args = ["submit", str(path), "-n", namespace, "--kubeconfig", str(kubeconfig)]
    assert main(args) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [f"configmap {namespace}/{config['metadata']['name']} applied",
                   f"dijob {namespace}/{dijob['metadata']['name']} created"]
    stored = client.CoreV1Api(cluster).read_namespaced_config_map(config["metadata"]["name"], namespace)
    assert stored.data == config["data"]  # untouched
    assert JobStore(cluster).get(namespace, dijob["metadata"]["name"]) is not None
    # applying again is harmless for the ConfigMap; the DIJob exists, which the API server says
    assert main(args) == 1
    assert "already exists" in capsys.readouterr().err
