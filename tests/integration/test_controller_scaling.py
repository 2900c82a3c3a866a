"""A hand edit of ``spec.tasks[].replicas`` (what ``kubectl edit`` sends) scales a running job in place.

The controller runs as in test_controller_jobs.py: a subprocess with a token of the chart's
ServiceAccount, watching the test's namespace only.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from kubernetes import client

from dihera.kube.jobs import JobStore
from dihera.kube.scale_executor import JobScaler
from dihera.membership import Membership
from dihera.scaling import GENERATION_ANNOTATION, ScaleRequest, read_dag, spec_generation
from dihera.schema import GROUP, PLURAL, VERSION
from tests.integration.conftest import Poll
from tests.integration.controllers import Controller
from tests.integration.elastic import NAME, container_env, live_pods, settled, status_of
from tests.integration.jobs import dijob_events, edit_replicas, job_pods, manifest, task

pytestmark = pytest.mark.cluster
RUN_SECONDS = "45"  # long enough for both scale steps, short enough to see the job succeed


def identity(pod: dict[str, Any]) -> tuple[str, str, str]:
    meta = pod["metadata"]
    return meta["uid"], meta["annotations"]["diengine/rank"], pod["spec"]["hostname"]


def test_kubectl_edit_scales_collectors_2_5_3_in_place(
    controller: Controller,
    cluster: client.ApiClient,
    namespace: str,
    poll: Poll,
) -> None:
    jobs, core = JobStore(cluster), client.CoreV1Api(cluster)
    domain = f"di-{NAME}.{namespace}.svc.cluster.local"
    learner, collectors = task("learner"), task("collector", 2)
    for t in (learner, collectors):
        t["template"]["metadata"]["annotations"]["sim.dihera.io/run-seconds"] = RUN_SECONDS
    jobs.create(manifest(NAME, namespace, learner, collectors, maxReplicas=8))
    hosts = {f"{NAME}-learner-0", f"{NAME}-collector-0", f"{NAME}-collector-1"}
    first, _ = poll(lambda: settled(cluster, jobs, namespace, hosts, 3, 0), 60, "3 replicas Running")
    wf_uid = client.CustomObjectsApi(cluster).get_namespaced_custom_object(
        "argoproj.io", "v1alpha1", namespace, "workflows", NAME
    )["metadata"]["uid"]

    # 2 -> 5: three collectors join at ranks 3, 4, 5; nobody else moves
    edit_replicas(cluster, namespace, collector=5)
    hosts |= {f"{NAME}-collector-{i}" for i in (2, 3, 4)}
    grown, status = poll(lambda: settled(cluster, jobs, namespace, hosts, 6, 1), 60, "6 replicas Running, status")
    assert {h: identity(grown[h]) for h in first} == {h: identity(p) for h, p in first.items()}, "a survivor moved"
    cm = core.read_namespaced_config_map(f"di-{NAME}", namespace).data
    order = ["learner-0", "collector-0", "collector-1", "collector-2", "collector-3", "collector-4"]
    assert cm["DI_NODES"].split(",") == [f"{NAME}-{n}.{domain}" for n in order]
    assert Membership.from_json(cm["membership.json"]).generation == status["membershipGeneration"] == 2
    for rank, replica in enumerate(order):
        pod = grown[f"{NAME}-{replica}"]
        env = container_env(pod, cm)
        fqdn = f"{NAME}-{replica}.{domain}"
        assert (env["DI_RANK"], env["DI_FQDN"], pod["metadata"]["annotations"]["diengine/rank"]) == (
            str(rank),
            fqdn,
            str(rank),
        )
        assert env["DI_NODES"].split(",")[rank] == fqdn and pod["spec"]["hostname"] == f"{NAME}-{replica}"
    assert status["taskStatus"] == {"learner": {"Running": 1}, "collector": {"Running": 5}}

    # 5 -> 3: the two highest-ranked collectors are retired and their pods deleted
    edit_replicas(cluster, namespace, collector=3)
    hosts -= {f"{NAME}-collector-3", f"{NAME}-collector-4"}
    shrunk, status = poll(lambda: settled(cluster, jobs, namespace, hosts, 4, 2), 60, "4 replicas Running, status")
    assert {h: identity(shrunk[h]) for h in hosts} == {h: identity(grown[h]) for h in hosts}, "a survivor moved"
    assert status["restarts"] == 0 and status["membershipGeneration"] == 3
    assert status["taskStatus"] == {"learner": {"Running": 1}, "collector": {"Running": 3}}
    cm = core.read_namespaced_config_map(f"di-{NAME}", namespace).data
    assert cm["DI_NODES"].split(",") == [f"{NAME}-{n}.{domain}" for n in order[:4]]
    workflows = client.CustomObjectsApi(cluster).list_namespaced_custom_object(
        "argoproj.io", "v1alpha1", namespace, "workflows"
    )["items"]
    assert [w["metadata"]["uid"] for w in workflows] == [wf_uid], "the job must keep its one Workflow"
    assert sorted(read_dag(workflows[0]).retired) == ["collector-3", "collector-4"]
    # (JobRescheduling shows only if the controller looks before kwok's new pods are ready: not asserted)
    expected = [
        "membership generation 2: 6 replicas (learner 1, collector 5)",
        "membership generation 3: 4 replicas (learner 1, collector 3)",
    ]

    def changes() -> list[str] | None:  # Events are sent in the background: poll, then compare
        found = sorted(m for r, m in dijob_events(cluster, namespace, NAME) if r == "ReplicasChanged")
        return found if len(found) >= len(expected) else None

    assert poll(changes, 30, "two ReplicasChanged Events") == expected

    # the pods finish: the retired replicas count neither as failures nor as restarts
    final = poll(lambda: (s := status_of(jobs, namespace)).get("phase") in ("Succeeded", "Failed") and s, 120, "done")
    assert final["phase"] == "Succeeded", final["conditions"][-1]
    assert (final["replicas"], final["reschedules"], final["restarts"]) == (4, 2, 0)
    assert final["taskStatus"] == {"learner": {"Succeeded": 1}, "collector": {"Succeeded": 3}}


def test_a_stale_spec_written_after_a_newer_commit_is_not_synced_back(
    controller: Controller,
    cluster: client.ApiClient,
    namespace: str,
    poll: Poll,
) -> None:
    """Two server requests interleave: A (2 -> 3) writes its spec after B (3 -> 4) committed and patched
    the Workflow. The controller must not "sync" B away; it brings the spec to B's counts instead."""
    name, jobs, custom = "racy", JobStore(cluster), client.CustomObjectsApi(cluster)
    learner, collectors = task("learner"), task("collector", 2)
    for t in (learner, collectors):
        t["template"]["metadata"]["annotations"]["sim.dihera.io/run-seconds"] = "120"
    jobs.create(manifest(name, namespace, learner, collectors, maxReplicas=8))
    poll(lambda: (jobs.get(namespace, name) or {}).get("status", {}).get("phase") == "Running", 60, "Running")

    def state() -> tuple[int, int, dict[str, int], int]:
        """membership generation, its collectors, the spec's replicas, the DIJob's stamp"""
        cm = client.CoreV1Api(cluster).read_namespaced_config_map(f"di-{name}", namespace).data
        members = Membership.from_json(cm["membership.json"])
        body = jobs.get(namespace, name) or {}
        spec = {t.get("name") or t["type"]: t["replicas"] for t in body["spec"]["tasks"]}
        return members.generation, len(members.of_task("collector")), spec, spec_generation(body)

    scaler = JobScaler(cluster)  # a server's scaler; update_spec=False holds its spec write back
    a = scaler.scale(namespace, name, ScaleRequest.add("collector", 1), update_spec=False)
    b = scaler.scale(namespace, name, ScaleRequest.add("collector", 1), update_spec=False)
    assert (a.membership.generation, b.membership.generation, b.replicas["collector"]) == (2, 3, 4)
    # A's spec write (counts and stamp of generation 2, read before B committed) lands now
    stale = {
        "metadata": {"annotations": {GENERATION_ANNOTATION: "2"}},
        "spec": {"tasks": [{**t, "replicas": a.replicas[t["type"]]} for t in (learner, collectors)]},
    }
    custom.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, name, stale, _content_type="application/merge-patch+json"
    )
    # the controller catches the spec up with B; it never commits A's counts again
    poll(lambda: state() == (3, 4, {"learner": 1, "collector": 4}, 3), 30, "spec caught up with B")
    hosts = {f"{name}-learner-0", *(f"{name}-collector-{i}" for i in range(4))}
    poll(lambda: set(live_pods(cluster, namespace, name)) == hosts, 60, "B's 4 collectors")
    changes = [m for r, m in dijob_events(cluster, namespace, name) if r == "ReplicasChanged"]
    assert not [m for m in changes if "generation 4" in m], changes

    # a hand edit of the caught-up spec is applied; its stamp is written without a new metadata.generation
    edit_replicas(cluster, namespace, name, collector=2)
    edited = int((jobs.get(namespace, name) or {})["metadata"]["generation"])
    poll(lambda: state() == (4, 2, {"learner": 1, "collector": 2}, 4), 30, "edit applied and stamped")
    assert int((jobs.get(namespace, name) or {})["metadata"]["generation"]) == edited


def test_kubectl_edit_of_a_torch_task_is_refused_once_with_a_warning(
    controller: Controller,
    cluster: client.ApiClient,
    namespace: str,
    poll: Poll,
) -> None:
    name = "ddp"
    jobs, core = JobStore(cluster), client.CoreV1Api(cluster)
    learner = {**task("learner", 2), "envProvider": {"name": "torch"}}
    learner["template"]["metadata"]["annotations"]["sim.dihera.io/run-seconds"] = "600"
    jobs.create(manifest(name, namespace, learner))
    hosts = {f"{name}-learner-0", f"{name}-learner-1"}
    poll(lambda: set(live_pods(cluster, namespace, name)) == hosts, 60, "2 learners")
    before = core.read_namespaced_config_map(f"di-{name}", namespace).data

    edit_replicas(cluster, namespace, name, learner=3)
    warnings = poll(
        lambda: [m for r, m in dijob_events(cluster, namespace, name) if r == "ScaleRefused"], 60, "ScaleRefused"
    )
    assert len(warnings) == 1 and "uses the torch env provider" in warnings[0], warnings
    assert "allowScaling: true" in warnings[0]
    time.sleep(5)  # a permanent refusal: said once, not retried on every event
    assert [m for r, m in dijob_events(cluster, namespace, name) if r == "ScaleRefused"] == warnings
    assert core.read_namespaced_config_map(f"di-{name}", namespace).data == before
    assert set(live_pods(cluster, namespace, name)) == hosts


def test_a_pod_labelled_like_a_retired_replica_but_not_the_workflows_survives_a_scale_down(
    controller: Controller,
    cluster: client.ApiClient,
    namespace: str,
    poll: Poll,
) -> None:
    """Anyone who may create pods can label one ``diengine/job: shrink``, ``diengine/pod: shrink-collector-1``:
    the scale-down (the scaler's deletion, then the controller's) deletes only the Workflow's pod of the
    retired replica; the planted pod is never touched."""
    name, jobs, core = "shrink", JobStore(cluster), client.CoreV1Api(cluster)
    learner, collectors = task("learner"), task("collector", 2)
    for t in (learner, collectors):
        t["template"]["metadata"]["annotations"]["sim.dihera.io/run-seconds"] = "120"
    jobs.create(manifest(name, namespace, learner, collectors, maxReplicas=4))
    poll(lambda: (jobs.get(namespace, name) or {}).get("status", {}).get("phase") == "Running", 60, "Running")
    retired = live_pods(cluster, namespace, name)[f"{name}-collector-1"]["metadata"]["uid"]
    labels = {"diengine/job": name, "diengine/pod": f"{name}-collector-1", "diengine/task-type": "collector"}
    planted = {
        "metadata": {"name": "planted", "labels": labels},
        "spec": {"containers": [{"name": "main", "image": "busybox"}], "nodeName": "no-such-node"},
    }
    planted_uid = core.create_namespaced_pod(namespace, planted).metadata.uid

    edit_replicas(cluster, namespace, name, collector=1)

    def retired_gone() -> bool:
        uids = {p["metadata"]["uid"] for p in job_pods(cluster, namespace, name)}
        return retired not in uids

    poll(retired_gone, 60, "the retired collector-1's pod deleted")
    time.sleep(3)  # the controller's passes after the scale (its own retired-pod deletion) have run
    survivor = core.read_namespaced_pod("planted", namespace)
    assert survivor.metadata.uid == planted_uid and survivor.metadata.deletion_timestamp is None
