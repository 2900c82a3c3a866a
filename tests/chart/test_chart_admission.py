"""The admission policy that keeps the chart's service accounts to dihera's own objects (issue 57):
rendered with every namespace watched, not with ``watchNamespaces`` unless forced, naming the right
ServiceAccounts and checking the marks dihera's writes carry (tests/integration/test_admission_own_objects.py
runs it on the API server)."""

from __future__ import annotations

import pytest
import yaml

from dihera.constants import LABEL_JOB, LABEL_MANAGED_BY, MANAGED_BY
from dihera.schema import GROUP, KIND
from tests.chart.helm import Manifest, by_kind, one, render, template

POLICY = "dihera-own-objects"
SA = "system:serviceaccount:dihera-system:"


def policies(values: Manifest | None = None) -> list[str]:
    return sorted(o["metadata"]["name"] for o in by_kind(render(values), "ValidatingAdmissionPolicy"))


def users(values: Manifest | None = None) -> list[str]:
    """The usernames the policy's matchCondition selects."""
    [condition] = one(render(values), "ValidatingAdmissionPolicy", POLICY)["spec"]["matchConditions"]
    expression: str = condition["expression"]
    prefix = "request.userInfo.username in "
    assert expression.startswith(prefix), expression
    found: list[str] = yaml.safe_load(expression.removeprefix(prefix))
    return found


@pytest.mark.parametrize(
    "values, rendered",
    [
        ({}, True),  # every namespace watched: on by default
        ({"watchNamespaces": ["team-a"]}, False),  # Roles in team-a only: off by default
        ({"watchNamespaces": ["team-a"], "admissionPolicy": {"enabled": True, "ownObjectsOnly": True}}, True),
        ({"admissionPolicy": {"enabled": True, "ownObjectsOnly": False}}, False),
        ({"admissionPolicy": {"enabled": False, "ownObjectsOnly": "auto"}}, True),  # the Workflows one is apart
    ],
)
def test_rendered_when_cluster_wide_or_forced(values: Manifest, rendered: bool) -> None:
    assert (POLICY in policies(values)) is rendered, policies(values)
    bindings = {o["metadata"]["name"]: o for o in by_kind(render(values), "ValidatingAdmissionPolicyBinding")}
    assert (POLICY in bindings) is rendered
    if rendered:
        assert bindings[POLICY]["spec"] == {"policyName": POLICY, "validationActions": ["Deny"]}


def test_the_workflows_policy_is_still_rendered_beside_it() -> None:
    assert policies() == ["dihera-dijob-workflows", POLICY]


def test_not_rendered_before_kubernetes_1_30() -> None:
    done = template({}, "--kube-version", "v1.29.0")
    assert done.returncode == 0, done.stderr
    kinds = [d["kind"] for d in yaml.safe_load_all(done.stdout) if d]
    assert "ValidatingAdmissionPolicy" not in kinds


def test_selects_the_controller_and_the_server_only() -> None:
    assert users() == [SA + "dihera-controller", SA + "dihera-server"]
    named = {
        "controller": {"serviceAccount": {"create": True, "name": "ctl", "annotations": {}}},
        "server": {"serviceAccount": {"create": False, "name": "srv", "annotations": {}}},
    }
    assert users(named) == [SA + "ctl", SA + "srv"]
    # Both without a ServiceAccount of their own run as the namespace's `default`: named once.
    unnamed = {
        c: {"serviceAccount": {"create": False, "name": "", "annotations": {}}} for c in ("controller", "server")
    }
    assert users(unnamed) == [SA + "default"]
    released = template({}, "--namespace", "ops")
    assert "system:serviceaccount:ops:dihera-controller" in released.stdout, released.stderr


def test_guards_the_writes_their_rbac_allows() -> None:
    rules = one(render(), "ValidatingAdmissionPolicy", POLICY)["spec"]["matchConstraints"]["resourceRules"]
    guarded = {
        (g, r, op) for rule in rules for g in rule["apiGroups"] for r in rule["resources"] for op in rule["operations"]
    }
    for write in [
        ("", "configmaps", "CREATE"),
        ("", "configmaps", "UPDATE"),
        ("", "configmaps", "DELETE"),
        ("", "services", "UPDATE"),
        ("", "pods", "DELETE"),
        ("", "pods", "UPDATE"),
        ("argoproj.io", "workflows", "DELETE"),
        ("argoproj.io", "workflows", "UPDATE"),
    ]:
        assert write in guarded, write


def test_checks_the_marks_dihera_puts_on_its_objects() -> None:
    """The CEL names the label keys and values of dihera/constants.py and the owners' kinds and groups."""
    spec = one(render(), "ValidatingAdmissionPolicy", POLICY)["spec"]
    assert spec["failurePolicy"] == "Fail"
    variables = {v["name"]: v["expression"] for v in spec["variables"]}
    for side, var in (("oldObject", "oldIsOurs"), ("object", "newIsOurs")):
        cel = variables[var]
        assert "\n" not in cel, cel
        assert f"'{LABEL_JOB}' in {side}.metadata.labels" in cel
        assert f"{side}.metadata.labels['{LABEL_MANAGED_BY}'] == '{MANAGED_BY[LABEL_MANAGED_BY]}'" in cel
        assert f"r.kind == '{KIND}' && r.apiVersion.startsWith('{GROUP}/')" in cel
        assert "r.kind == 'Workflow' && r.apiVersion.startsWith('argoproj.io/')" in cel
    assert variables["oldIsOurs"].startswith("request.operation == 'CREATE' || ")
    assert variables["newIsOurs"].startswith("request.operation == 'DELETE' || ")
    assert [v["expression"] for v in spec["validations"]] == ["variables.oldIsOurs", "variables.newIsOurs"]


def test_ownobjectsonly_takes_auto_true_or_false_only() -> None:
    done = template({"admissionPolicy": {"enabled": True, "ownObjectsOnly": "yes"}})
    assert done.returncode != 0
    assert "/admissionPolicy/ownObjectsOnly" in done.stderr, done.stderr
