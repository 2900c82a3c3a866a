"""RBAC is exact: each component gets precisely the permissions below, and no wildcard anywhere.

The rules live in templates/controller/_rules.tpl and templates/server/_rules.tpl; change a list there and
here together.
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from tests.chart.helm import Manifest, by_kind, one, render

Grant = tuple[str, str, str]  # (apiGroup, resource, verb)

READ = ("get", "list", "watch")
WRITE = ("create", "patch", "update", "delete")


def grants(group: str, resources: Iterable[str], verbs: Iterable[str]) -> set[Grant]:
    return {(group, r, v) for r in resources for v in verbs}


CONTROLLER_NAMESPACED = (
    grants("diengine.opendilab.org", ["dijobs"], [*READ, "patch", "update"])
    | grants("diengine.opendilab.org", ["dijobs/status"], ["get", "patch", "update"])
    | grants("diengine.opendilab.org", ["dijobs/finalizers"], ["update"])
    | grants("argoproj.io", ["workflows"], [*READ, *WRITE])
    | grants("", ["pods"], [*READ, "delete"])
    | grants("", ["services", "configmaps"], [*READ, *WRITE])
    | grants("", ["events"], ["create", "patch"])
    | grants("events.k8s.io", ["events"], ["create", "patch"])
    | grants("kopf.dev", ["kopfpeerings"], [*READ, "patch"])
)
CONTROLLER_CLUSTER = (
    grants("kopf.dev", ["clusterkopfpeerings"], [*READ, "patch"])
    | grants("apiextensions.k8s.io", ["customresourcedefinitions"], READ)
    | grants("", ["namespaces"], READ)
)
SERVER_NAMESPACED = (
    grants("diengine.opendilab.org", ["dijobs"], [*READ, "patch", "update"])
    | grants("diengine.opendilab.org", ["dijobs/status"], ["get", "patch"])
    | grants("argoproj.io", ["workflows"], [*READ, "patch", "update"])
    | grants("", ["configmaps"], [*READ, "patch", "update"])
    | grants("", ["pods"], [*READ, "delete"])
)
SERVER_CLUSTER = grants("authentication.k8s.io", ["tokenreviews"], ["create"]) | grants(
    "authorization.k8s.io", ["subjectaccessreviews"], ["create"]
)


def granted(role: Manifest) -> set[Grant]:
    out: set[Grant] = set()
    for rule in role["rules"]:
        assert set(rule) <= {"apiGroups", "resources", "verbs"}, f"unexpected rule fields in {rule}"
        for group in rule["apiGroups"]:
            out |= grants(group, rule["resources"], rule["verbs"])
    return out


@pytest.mark.parametrize(
    "name, expected",
    [
        ("dihera-controller", CONTROLLER_NAMESPACED | CONTROLLER_CLUSTER),
        ("dihera-server", SERVER_NAMESPACED | SERVER_CLUSTER),
    ],
)
def test_cluster_wide_roles_are_exact(name: str, expected: set[Grant]) -> None:
    objs = render()
    assert granted(one(objs, "ClusterRole", name)) == expected
    binding = one(objs, "ClusterRoleBinding", name)
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": name, "namespace": "dihera-system"}]


def test_namespaced_roles_are_exact() -> None:
    objs = render({"watchNamespaces": ["team-a", "team-b"]})
    for ns in ("team-a", "team-b"):
        assert granted(one(objs, "Role", "dihera-controller", ns)) == CONTROLLER_NAMESPACED
        assert granted(one(objs, "Role", "dihera-server", ns)) == SERVER_NAMESPACED
    assert granted(one(objs, "ClusterRole", "dihera-server")) == SERVER_CLUSTER


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
