"""What the chart renders: names others rely on, CRDs on/off/keep, namespaced mode, settings, leader election."""

from __future__ import annotations

import re

import pytest

from dihera import cli
from tests.chart.helm import RELEASE_NAMESPACE, REPO, Manifest, by_kind, one, render

CRDS = {"dijobs.diengine.opendilab.org"}
KEEP = "helm.sh/resource-policy"


def crds(values: Manifest | None = None) -> dict[str, Manifest]:
    return {c["metadata"]["name"]: c for c in by_kind(render(values), "CustomResourceDefinition")}


def test_default_names_are_the_ones_others_use() -> None:
    objs = render()
    names = {(o["kind"], o["metadata"]["name"]) for o in objs}
    for expected in [
        ("Deployment", "dihera-controller"),
        ("Deployment", "dihera-server"),
        ("ServiceAccount", "dihera-controller"),
        ("ServiceAccount", "dihera-server"),
        ("Service", "dihera-server"),
        ("ClusterRole", "dihera-controller"),
        ("ClusterRole", "dihera-server"),
        ("ConfigMap", "dihera-settings"),
    ]:
        assert expected in names
    service = one(objs, "Service", "dihera-server")
    assert service["metadata"]["namespace"] == RELEASE_NAMESPACE
    assert [(p["name"], p["port"]) for p in service["spec"]["ports"]] == [("http", 8081)]


def test_settings_give_pods_the_server_url() -> None:
    data = one(render(), "ConfigMap", "dihera-settings")["data"]
    assert data["DIHERA_SERVER_URL"] == "https://dihera-server.dihera-system.svc.cluster.local:8081"
    assert data["DIHERA_CLUSTER_DOMAIN"] == "cluster.local"
    assert data["DIHERA_WATCH_NAMESPACES"] == ""
    assert data["DIHERA_LOG_LEVEL"] == "info"
    custom = one(
        render({"clusterDomain": "corp.internal", "watchNamespaces": ["a", "b"], "logLevel": "debug"}),
        "ConfigMap",
        "dihera-settings",
    )["data"]
    assert custom["DIHERA_SERVER_URL"] == "https://dihera-server.dihera-system.svc.corp.internal:8081"
    assert custom["DIHERA_WATCH_NAMESPACES"] == "a,b"
    assert custom["DIHERA_LOG_LEVEL"] == "debug"
    url = "https://di.example.com"
    assert one(render({"server": {"url": url}}), "ConfigMap", "dihera-settings")["data"]["DIHERA_SERVER_URL"] == url


def test_both_deployments_read_the_settings_and_roll_when_they_change() -> None:
    def checksum(values: Manifest | None, name: str) -> str:
        dep = one(render(values), "Deployment", name)
        container = dep["spec"]["template"]["spec"]["containers"][0]
        assert container["envFrom"] == [{"configMapRef": {"name": "dihera-settings"}}]
        return str(dep["spec"]["template"]["metadata"]["annotations"]["checksum/settings"])

    for name in ("dihera-controller", "dihera-server"):
        assert checksum(None, name) != checksum({"logLevel": "debug"}, name)


def test_entry_points_and_image() -> None:
    objs = render({"image": {"repository": "reg.example/dihera", "tag": "1.2.3", "pullPolicy": "Always"}})
    for component in ("controller", "server"):
        container = one(objs, "Deployment", f"dihera-{component}")["spec"]["template"]["spec"]["containers"][0]
        assert container["args"][0] == component
        assert container["image"] == "reg.example/dihera:1.2.3"
        assert container["imagePullPolicy"] == "Always"
    default = one(render(), "Deployment", "dihera-server")["spec"]["template"]["spec"]["containers"][0]
    assert default["image"] == "dihera:0.1.0"
    extra = one(render({"server": {"extraArgs": ["--no-auth"]}}), "Deployment", "dihera-server")
    assert extra["spec"]["template"]["spec"]["containers"][0]["args"][-1] == "--no-auth"


def test_crds_enabled_and_kept_by_default() -> None:
    found = crds()
    assert set(found) == CRDS
    for crd in found.values():
        assert crd["metadata"]["annotations"][KEEP] == "keep"
        assert crd["metadata"]["labels"]["app.kubernetes.io/part-of"] == "dihera"


def test_crds_not_kept_without_crds_keep() -> None:
    found = crds({"crds": {"keep": False, "annotations": {"team": "ml"}}})
    assert set(found) == CRDS
    for crd in found.values():
        assert KEEP not in crd["metadata"]["annotations"]
        assert crd["metadata"]["annotations"]["team"] == "ml"


def test_crds_disabled() -> None:
    assert crds({"crds": {"enabled": False}}) == {}


def test_leader_election_is_a_lease_in_the_release_namespace_the_controller_may_renew() -> None:
    objs = render()
    data = one(objs, "ConfigMap", "dihera-settings")["data"]
    assert data["DIHERA_LEASE_NAME"] == "dihera-controller"
    assert (data["DIHERA_LEASE_DURATION"], data["DIHERA_LEASE_RENEW_DEADLINE"], data["DIHERA_LEASE_RETRY_PERIOD"]) == (
        "15",
        "10",
        "2",
    )
    role = one(objs, "Role", "dihera-controller-leader-election", RELEASE_NAMESPACE)
    assert role["rules"] == [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "create", "update"]}
    ]
    binding = one(objs, "RoleBinding", "dihera-controller-leader-election", RELEASE_NAMESPACE)
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "dihera-controller", "namespace": "dihera-system"}
    ]
    assert not [o for o in objs if "kopf" in o.get("apiVersion", "") or "kopf" in o["metadata"]["name"]]
    off = render({"leaderElection": {"enabled": False}})
    assert one(off, "ConfigMap", "dihera-settings")["data"]["DIHERA_LEASE_NAME"] == ""
    assert [o for o in by_kind(off, "Role") if o["metadata"]["name"].endswith("leader-election")] == []
    named = render({"leaderElection": {"leaseName": "mine", "leaseDuration": 30}})
    assert one(named, "ConfigMap", "dihera-settings")["data"]["DIHERA_LEASE_NAME"] == "mine"
    assert one(named, "ConfigMap", "dihera-settings")["data"]["DIHERA_LEASE_DURATION"] == "30"


@pytest.mark.parametrize("namespaces", [["team-a"], ["team-a", "team-b"]])
def test_namespaced_mode_roles_in_each_namespace(namespaces: list[str]) -> None:
    objs = render({"watchNamespaces": namespaces})
    for component in ("controller", "server"):
        name = f"dihera-{component}"
        for ns in namespaces:
            one(objs, "Role", name, ns)
            binding = one(objs, "RoleBinding", name, ns)
            assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name}
            assert binding["subjects"] == [{"kind": "ServiceAccount", "name": name, "namespace": RELEASE_NAMESPACE}]
        assert len(by_kind([o for o in objs if o["metadata"]["name"] == name], "Role")) == len(namespaces)
    cluster_roles = {o["metadata"]["name"] for o in by_kind(objs, "ClusterRole")}
    assert "dihera-controller" not in cluster_roles
    assert "dihera-controller" not in {o["metadata"]["name"] for o in by_kind(objs, "ClusterRoleBinding")}
    assert "dihera-server" in cluster_roles  # token and access reviews are cluster-scoped APIs
    # the leader-election Lease lives in the release's namespace, whatever the namespaces watched
    lease_role = one(objs, "Role", "dihera-controller-leader-election", RELEASE_NAMESPACE)
    assert lease_role["rules"][0]["resources"] == ["leases"]


def test_rbac_create_false_renders_no_rbac() -> None:
    objs = render({"rbac": {"create": False}})
    assert not [o for o in objs if o["apiVersion"].startswith("rbac.authorization.k8s.io/")]


def test_aggregated_user_roles() -> None:
    objs = render()
    viewer = one(objs, "ClusterRole", "dihera-dijob-viewer")
    editor = one(objs, "ClusterRole", "dihera-dijob-editor")
    assert viewer["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-view"] == "true"
    assert editor["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-edit"] == "true"
    assert editor["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-admin"] == "true"
    assert "rbac.authorization.k8s.io/aggregate-to-view" not in editor["metadata"]["labels"]
    assert [r["verbs"] for r in viewer["rules"]] == [["get", "list", "watch"]]
    off = {o["metadata"]["name"] for o in by_kind(render({"rbac": {"aggregateToDefaultRoles": False}}), "ClusterRole")}
    assert not off & {"dihera-dijob-viewer", "dihera-dijob-editor"}


def test_service_monitors_only_when_enabled() -> None:
    assert by_kind(render(), "ServiceMonitor") == []
    objs = render({"metrics": {"serviceMonitor": {"enabled": True, "labels": {"release": "prom"}}}})
    monitors = {m["metadata"]["name"]: m for m in by_kind(objs, "ServiceMonitor")}
    assert set(monitors) == {"dihera-controller", "dihera-server"}
    for name, port in [("dihera-controller", "metrics"), ("dihera-server", "http")]:
        (endpoint,) = monitors[name]["spec"]["endpoints"]
        assert (endpoint["port"], endpoint["path"]) == (port, "/metrics")
        assert monitors[name]["metadata"]["labels"]["release"] == "prom"
        selector = monitors[name]["spec"]["selector"]["matchLabels"]
        services = [s for s in by_kind(objs, "Service") if selector.items() <= s["metadata"]["labels"].items()]
        assert [p["name"] for s in services for p in s["spec"]["ports"]] == [port]


def test_the_controller_gives_dijob_replicas_the_charts_own_image_for_their_peer_wait() -> None:
    data = one(render(), "ConfigMap", "dihera-settings")["data"]
    image = (data["DIHERA_PEER_WAIT_IMAGE"], data["DIHERA_PEER_WAIT_IMAGE_PULL_POLICY"])
    assert image == ("dihera:0.1.0", "IfNotPresent")
    assert data["DIHERA_PEER_WAIT_TIMEOUT"] == "300"
    values = {"image": {"repository": "reg/dihera", "tag": "7", "pullPolicy": "Never"}, "peerWaitTimeout": 0}
    custom = one(render(values), "ConfigMap", "dihera-settings")["data"]
    assert (custom["DIHERA_PEER_WAIT_IMAGE"], custom["DIHERA_PEER_WAIT_IMAGE_PULL_POLICY"]) == ("reg/dihera:7", "Never")
    assert custom["DIHERA_PEER_WAIT_TIMEOUT"] == "0"


def test_long_release_names_are_truncated_to_63() -> None:
    objs = render({"fullnameOverride": "x" * 63})
    for obj in objs:
        assert len(obj["metadata"]["name"]) <= 63, obj["metadata"]["name"]


#: Variables read by client commands (`dihera scale --server`), not by the chart's components; and those a
#: sweep gives its trials' processes (dihera.sweeps.sweep), which dihera writes but never reads.
CLIENT_ONLY = {"DIHERA_TOKEN", "DIHERA_CA_FILE", "DIHERA_PARAM_", "DIHERA_SEED", "DIHERA_TRIAL"}


def test_every_setting_the_code_reads_is_given_by_the_chart() -> None:
    """Each `"DIHERA_..."` variable named in dihera/ comes from the settings ConfigMap or the container env."""
    sources = (p.read_text(encoding="utf-8") for p in (REPO / "dihera").rglob("*.py"))
    read = {name for text in sources for name in re.findall(r"\"(DIHERA_[A-Z_]+)\"", text)} - CLIENT_ONLY
    given: set[str] = set()
    for values in ({}, {"server": {"tls": {"enabled": False}}}):  # DIHERA_PLAIN_HTTP only without TLS
        objs = render(values)
        given |= set(one(objs, "ConfigMap", "dihera-settings")["data"])
        for dep in by_kind(objs, "Deployment"):
            given |= {e["name"] for e in dep["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert read - given == set(), "add these to templates/settings-configmap.yaml"
    objs = render()
    assert one(objs, "ConfigMap", "dihera-settings")["data"]["DIHERA_BIND_ADDRESS"] == "0.0.0.0"


@pytest.mark.parametrize("values", [{}, {"watchNamespaces": ["team-a"]}, {"watchNamespaces": ["a", "b"]}])
def test_container_args_parse_with_the_real_cli(values: Manifest) -> None:
    """The rendered `dihera <component> ...` arguments are accepted by dihera's own argument parser."""
    deployments = by_kind(render(values), "Deployment")
    deps = {d["metadata"]["name"]: d["spec"]["template"]["spec"]["containers"][0] for d in deployments}
    for name, container in deps.items():
        args = cli.build_parser().parse_args(container["args"])
        assert args.command == container["args"][0], name
    server = cli.build_parser().parse_args(deps["dihera-server"]["args"])
    assert (server.host, server.port) == ("0.0.0.0", deps["dihera-server"]["ports"][0]["containerPort"])
    watched = values.get("watchNamespaces") or []
    assert server.namespace == (watched[0] if len(watched) == 1 else None)
