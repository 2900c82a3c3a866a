"""``kueue.enabled`` (docs/queueing.md): the controller's and di-server's Kueue grants appear only with it, the
WorkloadPriorityClasses of the default mapping are created, the settings reach both components, and a
namespaced install (no ClusterRole for the controller) is refused with the reason."""

from __future__ import annotations

import pytest

from tests.chart.helm import by_kind, one, render
from tests.chart.rbac import granted

KUEUE = {"kueue": {"enabled": True}}


def kueue_grants(role: dict[str, object]) -> set[tuple[str, str, str]]:
    return {g for g in granted(role) if g[0] == "kueue.x-k8s.io"}  # type: ignore[arg-type]


def test_without_kueue_nothing_of_it_is_granted_or_created() -> None:
    objs = render()
    for name in ("dihera-controller", "dihera-server"):
        assert kueue_grants(one(objs, "ClusterRole", name)) == set()
    assert by_kind(objs, "WorkloadPriorityClass") == []
    settings = one(objs, "ConfigMap", "dihera-settings")["data"]
    assert settings["DIHERA_KUEUE"] == "false"


def test_with_kueue_the_components_get_exactly_what_they_use() -> None:
    objs = render(KUEUE)
    controller = kueue_grants(one(objs, "ClusterRole", "dihera-controller"))
    workloads = {("kueue.x-k8s.io", "workloads", v) for v in ("get", "list", "watch", "create", "patch", "delete")}
    assert controller == workloads | {
        ("kueue.x-k8s.io", "workloads/status", "patch"),
        ("kueue.x-k8s.io", "resourceflavors", "get"),
        ("kueue.x-k8s.io", "workloadpriorityclasses", "get"),
        ("kueue.x-k8s.io", "localqueues", "get"),
        ("kueue.x-k8s.io", "clusterqueues", "get"),
    }
    server = kueue_grants(one(objs, "ClusterRole", "dihera-server"))
    assert server == {("kueue.x-k8s.io", "workloads", v) for v in ("get", "list", "create", "delete")} | {
        ("kueue.x-k8s.io", "workloads/status", "patch"),
        ("kueue.x-k8s.io", "workloadpriorityclasses", "get"),
    }


def test_with_kueue_the_priority_classes_and_settings() -> None:
    objs = render(KUEUE)
    classes = {o["metadata"]["name"]: o["value"] for o in by_kind(objs, "WorkloadPriorityClass")}
    assert classes == {"dihera-low": 100, "dihera-normal": 200, "dihera-high": 300, "dihera-nonpreemptible": 1000}
    assert all(
        o["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
        for o in by_kind(objs, "WorkloadPriorityClass")
    )
    settings = one(objs, "ConfigMap", "dihera-settings")["data"]
    assert settings["DIHERA_KUEUE"] == "true"
    assert settings["DIHERA_KUEUE_PRIORITY_CLASSES"] == "low=dihera-low,normal=dihera-normal,high=dihera-high"
    assert settings["DIHERA_KUEUE_NONPREEMPTIBLE_CLASS"] == "dihera-nonpreemptible"
    custom = render({"kueue": {"enabled": True, "priorityClasses": {"create": False}}})
    assert by_kind(custom, "WorkloadPriorityClass") == []


def test_kueue_with_watch_namespaces_is_refused_with_the_reason() -> None:
    with pytest.raises(AssertionError, match=r"kueue\.enabled needs cluster-wide RBAC"):
        render({"kueue": {"enabled": True}, "watchNamespaces": ["team-a"]})
