"""Every container of the chart is hardened, bounded and probed, in every ci/ scenario."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.chart.helm import CHART, Manifest, by_kind, render

SCENARIOS = sorted((CHART / "ci").glob("*-values.yaml"))


def pod_specs(values: Manifest) -> list[tuple[str, Manifest]]:
    return [(d["metadata"]["name"], d["spec"]["template"]["spec"]) for d in by_kind(render(values), "Deployment")]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda p: p.stem)
def test_every_container_is_hardened(scenario: Path) -> None:
    specs = pod_specs(yaml.safe_load(scenario.read_text(encoding="utf-8")) or {})
    assert {name for name, _ in specs} == {"dihera-controller", "dihera-server"}
    for name, spec in specs:
        pod = spec["securityContext"]
        assert pod["runAsNonRoot"] is True, name
        assert pod["seccompProfile"] == {"type": "RuntimeDefault"}, name
        for c in spec.get("initContainers", []) + spec["containers"]:
            where = f"{name}/{c['name']}"
            sc = c["securityContext"]
            assert sc["runAsNonRoot"] is True, where
            assert sc["readOnlyRootFilesystem"] is True, where
            assert sc["allowPrivilegeEscalation"] is False, where
            assert sc["capabilities"]["drop"] == ["ALL"], where
            assert "add" not in sc["capabilities"], where
            assert sc["seccompProfile"] == {"type": "RuntimeDefault"}, where
            assert {"cpu", "memory"} <= set(c["resources"]["requests"]), where
            assert {"cpu", "memory"} <= set(c["resources"]["limits"]), where
            assert c["livenessProbe"]["httpGet"] and c["readinessProbe"]["httpGet"], where


def test_probes_hit_the_health_endpoints() -> None:
    specs = dict(pod_specs({}))

    def probe(name: str, kind: str) -> tuple[str, int]:
        container = specs[name]["containers"][0]
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        get = container[kind]["httpGet"]
        return get["path"], ports[get["port"]]

    assert probe("dihera-controller", "livenessProbe") == ("/healthz", 8081)
    assert probe("dihera-controller", "readinessProbe") == ("/readyz", 8080)
    assert probe("dihera-server", "livenessProbe") == ("/healthz", 8081)
    assert probe("dihera-server", "readinessProbe") == ("/readyz", 8081)


def test_writable_tmp_only() -> None:
    """/tmp is the one writable place; the di-server's certificate and the controller's copy of its CA are
    read-only mounts of the TLS Secret (without TLS, nothing but /tmp)."""
    tmp = {"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}}
    for values in ({}, {"server": {"tls": {"enabled": False}}}):
        for name, spec in pod_specs(values):
            mounts = spec["containers"][0]["volumeMounts"]
            assert spec["volumes"][0] == tmp and mounts[0] == {"name": "tmp", "mountPath": "/tmp"}, name
            assert all(m["readOnly"] for m in mounts[1:]) and all("secret" in v for v in spec["volumes"][1:]), name
            assert len(spec["volumes"]) == len(mounts) == (2 if values == {} else 1), (name, spec["volumes"])


def test_replicas_scheduling_and_pod_metadata_values() -> None:
    values = {
        "controller": {
            "replicas": 0,
            "nodeSelector": {"pool": "ops"},
            "tolerations": [{"operator": "Exists"}],
            "podAnnotations": {"a": "b"},
        },
        "server": {"replicas": 3, "affinity": {"podAntiAffinity": {}}, "podLabels": {"team": "rl"}},
    }
    deps = {d["metadata"]["name"]: d for d in by_kind(render(values), "Deployment")}
    controller, server = deps["dihera-controller"], deps["dihera-server"]
    assert controller["spec"]["replicas"] == 0 and server["spec"]["replicas"] == 3
    assert controller["spec"]["strategy"] == {"type": "Recreate"}
    assert controller["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "ops"}
    assert controller["spec"]["template"]["spec"]["tolerations"] == [{"operator": "Exists"}]
    assert controller["spec"]["template"]["metadata"]["annotations"]["a"] == "b"
    assert server["spec"]["template"]["spec"]["affinity"] == {"podAntiAffinity": {}}
    assert server["spec"]["template"]["metadata"]["labels"]["team"] == "rl"
    assert server["spec"]["selector"]["matchLabels"].items() <= server["spec"]["template"]["metadata"]["labels"].items()
