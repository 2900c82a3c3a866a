"""The di-server's optional NetworkPolicy (issue 57): off by default; on, only the watched namespaces' pods and
the listed peers reach its port, and the schema refuses a misspelt key."""

from __future__ import annotations

from tests.chart.helm import by_kind, one, render, template

PEER = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}


def test_off_by_default() -> None:
    assert by_kind(render(), "NetworkPolicy") == []


def test_on_it_admits_the_watched_namespaces_and_the_extra_peers_to_the_port_only() -> None:
    policy_values = {"enabled": True, "extraFrom": [PEER]}
    values = {"watchNamespaces": ["team-a", "team-b"], "server": {"networkPolicy": policy_values}}
    objs = render(values)
    policy = one(objs, "NetworkPolicy", "dihera-server")
    pod_labels = one(objs, "Deployment", "dihera-server")["spec"]["template"]["metadata"]["labels"]
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= pod_labels.items()
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    [rule] = policy["spec"]["ingress"]
    assert rule["ports"] == [{"port": "http", "protocol": "TCP"}]
    watched = {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["team-a", "team-b"]}
    assert rule["from"] == [{"namespaceSelector": {"matchExpressions": [watched]}}, PEER]


def test_watching_every_namespace_admits_pods_of_every_namespace() -> None:
    policy = one(render({"server": {"networkPolicy": {"enabled": True}}}), "NetworkPolicy", "dihera-server")
    assert policy["spec"]["ingress"][0]["from"] == [{"namespaceSelector": {}}]


def test_an_unknown_key_is_refused() -> None:
    done = template({"server": {"networkPolicy": {"enable": True}}})
    assert done.returncode != 0 and "enable" in done.stderr
