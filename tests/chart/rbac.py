"""The chart's RBAC rules as sets of grants, ``(apiGroup, resource, verb)``, to compare roles by."""

from __future__ import annotations

from collections.abc import Iterable

from tests.chart.helm import Manifest

__all__ = ["Grant", "granted", "grants"]

Grant = tuple[str, str, str]  # (apiGroup, resource, verb)


def grants(group: str, resources: Iterable[str], verbs: Iterable[str]) -> set[Grant]:
    """Every verb of ``verbs`` on every resource of ``resources`` in ``group``."""
    return {(group, r, v) for r in resources for v in verbs}


def granted(role: Manifest) -> set[Grant]:
    """What a Role or ClusterRole grants (its rules may hold apiGroups, resources and verbs only)."""
    out: set[Grant] = set()
    for rule in role["rules"]:
        assert set(rule) <= {"apiGroups", "resources", "verbs"}, f"unexpected rule fields in {rule}"
        for group in rule["apiGroups"]:
            out |= grants(group, rule["resources"], rule["verbs"])
    return out
