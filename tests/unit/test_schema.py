"""The schema is the source of truth: generated files must match it, and the CRD must be complete."""

from __future__ import annotations

from typing import Any

from dihera.schema import crd_manifest, dijob_schema
from dihera.schema.generate import ROOT, SOURCE, generated_files


def test_generated_files_match_the_schema() -> None:
    for path, text in generated_files().items():
        assert path.exists(), f"{path.relative_to(ROOT)} missing: run `make generate`"
        assert path.read_text(encoding="utf-8") == text, f"{path.relative_to(ROOT)} drifted: run `make generate`"


def test_package_schema_is_the_source() -> None:
    import json

    assert dijob_schema() == json.loads(SOURCE.read_text(encoding="utf-8"))


def _walk(schema: dict[str, Any], path: str = "") -> list[tuple[str, dict[str, Any]]]:
    out = []
    for name, sub in schema.get("properties", {}).items():
        out.append((f"{path}.{name}", sub))
        out += _walk(sub, f"{path}.{name}")
    if "items" in schema:
        out += _walk(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        out += _walk(schema["additionalProperties"], f"{path}{{}}")
    return out


def test_every_spec_and_status_field_is_described() -> None:
    schema = dijob_schema()
    undescribed = [
        p
        for p, s in _walk(schema)
        if not s.get("description")
        and not p.startswith((".apiVersion", ".kind", ".metadata"))
        and not p.endswith("[]")
        and "{}" not in p
    ]
    assert undescribed == []


def test_crd_shape() -> None:
    crd = crd_manifest(dijob_schema())
    assert crd["metadata"]["name"] == "dijobs.diengine.opendilab.org"
    assert crd["spec"]["names"]["shortNames"] == ["dijob"]
    assert crd["spec"]["scope"] == "Namespaced"
    (version,) = crd["spec"]["versions"]
    assert version["name"] == "v2alpha1" and version["storage"] and version["served"]
    assert version["subresources"] == {"status": {}}
    columns = [c["name"] for c in version["additionalPrinterColumns"]]
    assert columns[:4] == ["Phase", "Ready", "Replicas", "Restarts"] and columns[-1] == "Age"
    root = version["schema"]["openAPIV3Schema"]
    assert "$schema" not in root and "$id" not in root
    spec = root["properties"]["spec"]
    assert spec["required"] == ["tasks"]
    task = spec["properties"]["tasks"]["items"]
    assert task["properties"]["type"]["enum"] == ["learner", "collector", "evaluator", "none"]
    assert task["properties"]["replicas"]["minimum"] == 1
    rules = [
        r["rule"]
        for r in spec["x-kubernetes-validations"] + task["x-kubernetes-validations"] + root["x-kubernetes-validations"]
    ]
    assert len(rules) == 13
    autoscaling = task["properties"]["autoscaling"]
    assert len(autoscaling["x-kubernetes-validations"]) == 3
    assert spec["properties"]["trainingPolicy"]["properties"]["failOnNonFinite"]["default"] is True
    assert any("artifacts" in r and "a.task" in r for r in rules)
    assert spec["properties"]["checkpoint"]["x-kubernetes-validations"][0]["rule"].startswith("isQuantity(self.size)")
    assert any("checkpoint.tasks" in r for r in rules)
    assert any("exists" in r or "filter" in r for r in rules)
    assert any("successPolicy.targetTasks" in r for r in rules)
    assert any("DropReplica" in r and "allowScaling" in r for r in rules)
