"""Generated parts of the chart are in sync: the DIJob CRD with `dihera crd`, the README with values.yaml."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ci import chart_docs
from dihera import cli
from tests.chart.helm import one, render


def test_chart_crd_equals_dihera_crd(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["crd"]) == 0
    expected = yaml.safe_load(capsys.readouterr().out)
    chart = one(render(), "CustomResourceDefinition", expected["metadata"]["name"])
    assert chart["spec"] == expected["spec"]
    assert expected["metadata"]["labels"].items() <= chart["metadata"]["labels"].items()


def test_chart_readme_in_sync() -> None:
    readme: Path = chart_docs.CHART / "README.md"
    generated = chart_docs.render()
    assert chart_docs.undocumented(generated) == [], "document these values with a `# --` comment"
    assert readme.read_text(encoding="utf-8") == generated, "charts/dihera/README.md is stale: run `make chart-docs`"


def test_every_value_is_documented_in_the_readme() -> None:
    values = yaml.safe_load((chart_docs.CHART / "values.yaml").read_text(encoding="utf-8"))
    readme = (chart_docs.CHART / "README.md").read_text(encoding="utf-8")

    def top_keys(tree: dict[str, object], prefix: str = "") -> list[str]:
        keys = []
        for key, value in tree.items():
            if isinstance(value, dict) and value and key not in ("podSecurityContext", "securityContext", "resources"):
                keys += top_keys(value, f"{prefix}{key}.")
            else:
                keys.append(prefix + key)
        return keys

    missing = [k for k in top_keys(values) if f"| {k} |" not in readme]
    assert missing == []
