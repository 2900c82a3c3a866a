"""values.schema.json rejects unknown keys and wrong types, and `helm template` names the key."""

from __future__ import annotations

import pytest

from tests.chart.helm import Manifest, template


@pytest.mark.parametrize(
    "values, where, says",
    [
        ({"replicaCount": 2}, "at ''", "'replicaCount' not allowed"),
        ({"controller": {"replicas": 1, "bogus": True}}, "at '/controller'", "'bogus' not allowed"),
        (
            {"metrics": {"serviceMonitor": {"enabled": True, "intervall": "5s"}}},
            "at '/metrics/serviceMonitor'",
            "'intervall' not allowed",
        ),
        ({"crds": {"enabled": "yes"}}, "at '/crds/enabled'", "want boolean"),
        ({"server": {"port": "8081"}}, "at '/server/port'", "want integer"),
        ({"watchNamespaces": "team-a"}, "at '/watchNamespaces'", "want array"),
        ({"watchNamespaces": ["Team_A"]}, "at '/watchNamespaces/0'", "does not match pattern"),
        ({"logLevel": "verbose"}, "at '/logLevel'", "must be one of"),
        (
            {"image": {"repository": "x", "tag": "", "pullPolicy": "Sometimes"}},
            "at '/image/pullPolicy'",
            "'IfNotPresent'",
        ),
    ],
)
def test_bad_values_fail_naming_the_key(values: Manifest, where: str, says: str) -> None:
    done = template(values)
    assert done.returncode != 0, f"helm template accepted {values}"
    assert "values don't meet the specifications of the schema" in done.stderr
    line = next((ln for ln in done.stderr.splitlines() if where in ln), None)
    assert line is not None, f"no error {where} in:\n{done.stderr}"
    assert says in line, line


def test_good_values_pass() -> None:
    done = template({"watchNamespaces": ["team-a"], "server": {"url": "http://di:8081"}, "logLevel": "debug"})
    assert done.returncode == 0, done.stderr
