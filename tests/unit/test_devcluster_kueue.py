"""Kueue on the dev cluster (ci/devcluster/kueue.py): its configuration binds loopback only, names dihera's
DIJob as an external framework, and only Kueue's own webhooks are registered, on loopback URLs."""

from __future__ import annotations

import base64
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # `ci` is a top-level folder of the repo, not an installed package
    sys.path.insert(0, str(REPO))

from ci.devcluster import Settings  # noqa: E402
from ci.devcluster.kueue import (  # noqa: E402
    DEFAULT_FEATURE_GATES,
    PORT_NAMES,
    Files,
    KueueError,
    component,
    config,
    parse_feature_gates,
    webhook_configurations,
)
from ci.devcluster.settings import read_versions  # noqa: E402
from ci.devcluster.state import PORT_NAMES as CLUSTER_PORTS  # noqa: E402
from ci.devcluster.state import StateDir, pick_ports  # noqa: E402
from dihera.schema import crd  # noqa: E402

UPSTREAM = """\
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: mutating-webhook-configuration}
webhooks:
- admissionReviewVersions: [v1]
  clientConfig: {service: {name: webhook-service, namespace: system, path: /mutate-batch-v1-job}}
  failurePolicy: Fail
  name: mjob.kb.io
  rules: [{apiGroups: [batch], apiVersions: [v1], operations: [CREATE], resources: [jobs]}]
  sideEffects: None
- admissionReviewVersions: [v1]
  clientConfig: {service: {name: webhook-service, namespace: system, path: /mutate-kueue-x-k8s-io-v1beta2-workload}}
  failurePolicy: Fail
  name: mworkload.kb.io
  rules: [{apiGroups: [kueue.x-k8s.io], apiVersions: [v1beta2], operations: [CREATE], resources: [workloads]}]
  sideEffects: None
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: validating-webhook-configuration}
webhooks:
- admissionReviewVersions: [v1]
  clientConfig: {service: {name: webhook-service, namespace: system, path: /validate--v1-pod}}
  name: vpod.kb.io
  rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  sideEffects: None
- admissionReviewVersions: [v1]
  clientConfig:
    service: {name: webhook-service, namespace: system, path: /validate-kueue-x-k8s-io-v1beta2-clusterqueue}
  name: vclusterqueue.kb.io
  rules: [{apiGroups: [kueue.x-k8s.io], apiVersions: [v1beta2], operations: [CREATE], resources: [clusterqueues]}]
  sideEffects: None
"""


def test_kueue_is_pinned_and_its_ports_are_reserved_with_the_clusters() -> None:
    assert read_versions()["KUEUE_VERSION"].startswith("v0.")
    assert set(PORT_NAMES) <= set(CLUSTER_PORTS)


def test_the_configuration_binds_loopback_and_names_the_dijob_external_framework(tmp_path: Path) -> None:
    files = Files(StateDir(tmp_path))
    ports = pick_ports(30000)
    cfg = config(files, ports, {"ElasticJobsViaWorkloadSlices": True})
    assert cfg["apiVersion"] == "config.kueue.x-k8s.io/v1beta2"
    assert cfg["health"]["healthProbeBindAddress"] == f"127.0.0.1:{ports['kueue-health']}"
    assert cfg["metrics"]["bindAddress"] == f"127.0.0.1:{ports['kueue-metrics']}"
    assert cfg["webhook"] == {"host": "127.0.0.1", "port": ports["kueue-webhook"], "certDir": str(files.certs)}
    assert cfg["internalCertManagement"] == {"enable": False}
    assert cfg["leaderElection"] == {"leaderElect": False}
    # Kind.version.group of the CRD dihera serves
    kind, version, group = cfg["integrations"]["externalFrameworks"][0].split(".", 2)
    assert (kind, version, group) == (crd.KIND, crd.VERSION, crd.GROUP)
    assert cfg["featureGates"] == {**DEFAULT_FEATURE_GATES, "ElasticJobsViaWorkloadSlices": True}
    assert cfg["featureGates"]["VisibilityOnDemand"] is False  # its server would bind every interface
    assert cfg["featureGates"]["DisableWaitForPodsReady"] is True


def test_only_kueues_own_webhooks_are_registered_on_loopback_urls() -> None:
    ca = b"-----BEGIN CERTIFICATE-----\n"
    out = webhook_configurations(list(yaml.safe_load_all(UPSTREAM)), 21042, ca)
    assert [c["kind"] for c in out] == ["MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"]
    hooks = [h for c in out for h in c["webhooks"]]
    assert [h["name"] for h in hooks] == ["mworkload.kb.io", "vclusterqueue.kb.io"]
    assert hooks[0]["clientConfig"] == {
        "url": "https://127.0.0.1:21042/mutate-kueue-x-k8s-io-v1beta2-workload",
        "caBundle": base64.b64encode(ca).decode(),
    }
    assert hooks[0]["failurePolicy"] == "Fail"  # everything else of the webhook kept


def test_a_manifest_without_kueue_webhooks_is_refused() -> None:
    docs = [d for d in yaml.safe_load_all(UPSTREAM) if d["kind"] == "MutatingWebhookConfiguration"]
    docs[0]["webhooks"] = docs[0]["webhooks"][:1]
    with pytest.raises(KueueError, match=r"no kueue\.x-k8s\.io webhook in Kueue's MutatingWebhookConfiguration"):
        webhook_configurations(docs, 1, b"")


def test_feature_gates_parse_and_a_bad_one_names_itself() -> None:
    assert parse_feature_gates("") == {}
    assert parse_feature_gates("A=true, B=False") == {"A": True, "B": False}
    with pytest.raises(KueueError, match="feature gate 'B=yes'"):
        parse_feature_gates("A=true,B=yes")


def test_the_manager_gets_its_config_kubeconfig_and_metrics_cert_dir(tmp_path: Path) -> None:
    s = Settings.from_environ({"DIHERA_CACHE": str(tmp_path), "DIHERA_REAL_NODE": "0"})
    state = StateDir(tmp_path / "state")
    c = component(s, state)
    assert c.binary == s.pair_dir / "kueue"
    assert f"--config={Files(state).config}" in c.argv
    assert f"--kubeconfig={state.component_kubeconfig('kueue')}" in c.argv
    assert c.env == {"KUEUE_METRICS_CERT_DIR": str(Files(state).certs)}
