"""The chart README's argo-helm values for the Argo UI: the same columns and links dihera.argo_ui builds,
against the di-server Service the chart renders, and a server started with ``server.anonymousViews``."""

from __future__ import annotations

import re
from typing import Any

import yaml

from dihera import cli
from dihera.argo_ui import helm_values
from tests.chart.helm import REPO, one, render

README = REPO / "charts" / "dihera" / "README.md"
MARKER = "<!-- argo-helm values:"


def documented_values() -> dict[str, Any]:
    """The YAML block right after the marker comment in the chart README (generated from README.md.gotmpl)."""
    text = README.read_text()
    after = text[text.index(MARKER) :]
    block = re.search(r"```yaml\n(.*?)```", after, re.S)
    assert block is not None, f"no yaml block after {MARKER!r} in {README}"
    loaded: dict[str, Any] = yaml.safe_load(block.group(1))
    return loaded


def test_the_documented_argo_helm_values_are_what_dihera_builds_for_the_charts_service() -> None:
    objs = render()
    service = one(objs, "Service", "dihera-server")
    (port,) = [p["port"] for p in service["spec"]["ports"] if p["name"] == "http"]
    # the README reaches the Service through `kubectl port-forward svc/dihera-server <port>:http`, over HTTPS
    assert documented_values() == helm_values(f"https://127.0.0.1:{port}")
    assert f"port-forward svc/dihera-server {port}:http" in README.read_text()


def test_anonymous_views_value_reaches_the_server() -> None:
    for value, expected in ((None, False), (True, True), (False, False)):
        values = {} if value is None else {"server": {"anonymousViews": value}}
        args = one(render(values), "Deployment", "dihera-server")["spec"]["template"]["spec"]["containers"][0]["args"]
        parsed = cli.build_parser().parse_args(args)
        assert parsed.anonymous_views is expected, (value, args)
