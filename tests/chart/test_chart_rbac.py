"""RBAC renders as intended: bound to the right ServiceAccounts, the same rules cluster-wide and per
namespace, no wildcard anywhere, and the user-facing roles exact.

Whether the components' rules are exactly what the code uses is not retyped here: the rules live in
templates/controller/_rules.tpl and templates/server/_rules.tpl, and tests/integration/test_rbac_audit.py
compares them with the API server's audit log of the components' requests.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.chart.helm import CHART, REPO, Manifest, by_kind, one, render
from tests.chart.rbac import Grant, granted, grants

READ = ("get", "list", "watch")

#: Cluster-scoped resources: only in a ClusterRole, never in a namespace's Role.
CLUSTER_SCOPED = {
    ("authentication.k8s.io", "tokenreviews"),
    ("authorization.k8s.io", "subjectaccessreviews"),
}


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
    ) | grants("diengine.opendilab.org", ["dijobs/profilings"], ["create"])


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


def test_the_reporter_role_is_exactly_the_report_right_and_bound_with_the_executor_role() -> None:
    """A DIJob's pods get ``create`` on ``dijobs/profilings`` and nothing else (the di-server's report route checks
    it), bound to the same service accounts as Argo's executor role in each watched namespace."""
    objs = render(
        {"watchNamespaces": ["team-a", "team-b"], "executor": {"rbac": True, "serviceAccounts": ["default", "rl"]}}
    )
    assert granted(one(objs, "ClusterRole", "dihera-reporter")) == grants(
        "diengine.opendilab.org", ["dijobs/profilings"], ["create"]
    )
    for ns in ("team-a", "team-b"):
        binding = one(objs, "RoleBinding", "dihera-reporter", ns)
        assert binding["roleRef"] == {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "dihera-reporter",
        }
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": sa, "namespace": ns} for sa in ("default", "rl")
        ]
    wide = render()
    assert granted(one(wide, "ClusterRole", "dihera-reporter"))
    assert not [o for o in by_kind(wide, "RoleBinding") if o["metadata"]["name"] == "dihera-reporter"]
    off = render({"watchNamespaces": ["team-a"], "reporter": {"rbac": False}})
    assert not [o for o in off if "reporter" in o["metadata"]["name"]]
    assert one(off, "RoleBinding", "dihera-executor", "team-a"), "the executor role does not depend on it"


#: ``(dihera/path.py: Name, Class.method)`` in a rules file's comments: the code that uses a grant.
USES = re.compile(r"\((dihera/[\w/]+\.py):\s*([\w.,\s]+?)\)", re.S)
RULES = ("templates/controller/_rules.tpl", "templates/server/_rules.tpl")


def defined(path: Path) -> set[str]:
    """The module's top-level names and ``Class.method`` names."""
    names: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        if isinstance(node, ast.ClassDef):
            names |= {f"{node.name}.{f.name}" for f in node.body if isinstance(f, ast.FunctionDef)}
    return names


def comment_above(lines: list[str], i: int) -> str:
    """The comment lines right above line ``i`` (template directives skipped); "" when a rule is right above."""
    out: list[str] = []
    for line in reversed(lines[:i]):
        if line.startswith("{{"):
            continue
        if not line.startswith("#"):
            break
        out.append(line)
    return "\n".join(reversed(out))


@pytest.mark.parametrize("rules", RULES)
def test_every_grant_names_the_code_that_uses_it_and_that_code_exists(rules: str) -> None:
    """Which code uses each grant is said next to it, in the one file of the component's rules."""
    text = (CHART / rules).read_text()
    missing = []
    for path, names in USES.findall(text):
        found = defined(REPO / path)
        missing += [f"{path}: {n}" for n in (n.strip() for n in names.split(",")) if n and n not in found]
    assert not missing, f"{rules} names code that does not exist: {missing}"
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if not line.startswith("- apiGroups:"):
            continue
        comment = comment_above(lines, i)
        # a rule right below another shares its comment (one grant split over two resources)
        assert (comment == "" and lines[i - 1].startswith("  ")) or "dihera/" in comment, (
            f"{rules}:{i + 1}: a grant whose comment does not name the code that uses it"
        )
