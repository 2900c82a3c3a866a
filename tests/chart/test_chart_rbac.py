"""RBAC renders as intended: bound to the right ServiceAccounts, the same rules cluster-wide and per
namespace, no wildcard anywhere, and the user-facing roles exact.

Whether the components' rules are exactly what the code uses is not retyped here: the rules live in
templates/controller/_rules.tpl and templates/server/_rules.tpl, and tests/integration/test_rbac_audit.py
compares them with the API server's audit log of the components' requests.
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from tests.chart.helm import Manifest, by_kind, one, render

Grant = tuple[str, str, str]  # (apiGroup, resource, verb)

READ = ("get", "list", "watch")


def grants(group: str, resources: Iterable[str], verbs: Iterable[str]) -> set[Grant]:
    return {(group, r, v) for r in resources for v in verbs}


#: Cluster-scoped resources: only in a ClusterRole, never in a namespace's Role.
CLUSTER_SCOPED = {
    ("authentication.k8s.io", "tokenreviews"),
    ("authorization.k8s.io", "subjectaccessreviews"),
}


def granted(role: Manifest) -> set[Grant]:
    out: set[Grant] = set()
    for rule in role["rules"]:
        assert set(rule) <= {"apiGroups", "resources", "verbs"}, f"unexpected rule fields in {rule}"
        for group in rule["apiGroups"]:
            out |= grants(group, rule["resources"], rule["verbs"])
    return out


def namespaced(grants_: set[Grant]) -> set[Grant]:
    return {(g, r, v) for g, r, v in grants_ if (g, r) not in CLUSTER_SCOPED}


@pytest.mark.parametrize("name", ["dihera-controller", "dihera-server"])
def test_cluster_wide_roles_are_bound_to_their_service_account(name: str) -> None:
    objs = render()
    assert granted(one(objs, "ClusterRole", name))
    binding = one(objs, "ClusterRoleBinding", name)
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": name, "namespace": "dihera-system"}]


def test_namespaced_roles_grant_the_cluster_roles_namespaced_rules() -> None:
    wide = render()
    objs = render({"watchNamespaces": ["team-a", "team-b"]})
    for name in ("dihera-controller", "dihera-server"):
        expected = namespaced(granted(one(wide, "ClusterRole", name)))
        for ns in ("team-a", "team-b"):
            assert granted(one(objs, "Role", name, ns)) == expected
    server_wide = granted(one(wide, "ClusterRole", "dihera-server"))
    assert granted(one(objs, "ClusterRole", "dihera-server")) == server_wide - namespaced(server_wide)


def test_user_roles_are_exact() -> None:
    objs = render()
    assert granted(one(objs, "ClusterRole", "dihera-dijob-viewer")) == grants(
        "diengine.opendilab.org", ["dijobs", "dijobs/status"], READ
    )
    assert granted(one(objs, "ClusterRole", "dihera-dijob-editor")) == grants(
        "diengine.opendilab.org", ["dijobs"], ["create", "update", "patch", "delete", "deletecollection"]
    )


@pytest.mark.parametrize(
    "values", [{}, {"watchNamespaces": ["a", "b"]}, {"metrics": {"serviceMonitor": {"enabled": True}}}]
)
def test_no_wildcard_anywhere(values: Manifest) -> None:
    roles = [o for kind in ("ClusterRole", "Role") for o in by_kind(render(values), kind)]
    assert roles
    for role in roles:
        for rule in role["rules"]:
            for field, items in rule.items():
                assert "*" not in items, f"{role['kind']} {role['metadata']['name']}: wildcard in {field}"


def test_argo_executor_role_is_exactly_task_results_and_bound_in_each_watched_namespace() -> None:
    objs = render(
        {"watchNamespaces": ["team-a", "team-b"], "executor": {"rbac": True, "serviceAccounts": ["default", "rl"]}}
    )
    assert granted(one(objs, "ClusterRole", "dihera-executor")) == grants(
        "argoproj.io", ["workflowtaskresults"], ["create", "patch"]
    )
    for ns in ("team-a", "team-b"):
        binding = one(objs, "RoleBinding", "dihera-executor", ns)
        assert binding["roleRef"] == {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "dihera-executor",
        }
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": sa, "namespace": ns} for sa in ("default", "rl")
        ]
    wide = render()
    assert granted(one(wide, "ClusterRole", "dihera-executor"))
    assert not [o for o in by_kind(wide, "RoleBinding") if o["metadata"]["name"] == "dihera-executor"]
    assert not [
        o for o in render({"executor": {"rbac": False, "serviceAccounts": []}}) if "executor" in o["metadata"]["name"]
    ]
