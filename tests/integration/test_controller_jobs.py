"""The controller against the real control plane (marker ``cluster``), run as a subprocess with the chart's RBAC.

The controller authenticates with a token of the chart's ServiceAccount
``dihera-system:dihera-controller`` (RBAC objects from ``helm template``), so a missing permission
fails these tests. Each test gets a fresh namespace and its own controller watching only it (the
``controller`` fixture of conftest.py; tests/integration/controllers.py).
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from dihera.constants import ANNOTATION_ARTIFACT_COLLECTOR
from dihera.kube.jobs import JobStore
from dihera.kube.objects import ObjectStore
from tests.integration.conftest import Poll
from tests.integration.controllers import Controller
from tests.integration.jobs import dijob_events, job_pods, manifest, phase_is, task

pytestmark = pytest.mark.cluster

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = [p.name for p in sorted((REPO / "workflows").glob("*.yaml"))]


@pytest.mark.compat
@pytest.mark.parametrize("example", EXAMPLES)
def test_example_job_succeeds_with_ranks_fqdns_status_and_events(
    example: str, controller: Controller, cluster: client.ApiClient, namespace: str, poll: Poll
) -> None:
    jobs = JobStore(cluster)
    doc = yaml.safe_load((REPO / "workflows" / example).read_text())
    for t in doc["spec"]["tasks"]:  # the simulated nodes carry no accelerator labels
        t["template"]["spec"].pop("nodeSelector", None)
    doc["metadata"]["namespace"] = namespace
    name = doc["metadata"]["name"]
    order = [(t.get("name") or t["type"], i) for t in doc["spec"]["tasks"] for i in range(int(t.get("replicas", 1)))]
    for account in {t["template"]["spec"].get("serviceAccountName") for t in doc["spec"]["tasks"]} - {None}:
        body = client.V1ServiceAccount(metadata=client.V1ObjectMeta(name=account))
        client.CoreV1Api(cluster).create_namespaced_service_account(namespace, body)
    jobs.create(doc)
    seen: dict[str, dict[str, Any]] = {}

    def pods_seen() -> bool:
        for p in job_pods(cluster, namespace, name):
            seen[p["metadata"]["labels"]["diengine/pod"]] = p
        return len(seen) == len(order)

    poll(pods_seen, 60, f"the {len(order)} pods of {name}")
    status = poll(phase_is(jobs, namespace, name, "Succeeded"), 90, f"{name} Succeeded")

    cm = client.CoreV1Api(cluster).read_namespaced_config_map(f"di-{name}", namespace).data
    domain = f"di-{name}.{namespace}.svc.cluster.local"
    assert cm["DI_NODES"] == ",".join(f"{name}-{t}-{i}.{domain}" for t, i in order)
    for rank, (task_name, index) in enumerate(order):
        host = f"{name}-{task_name}-{index}"
        pod = seen[host]
        assert pod["spec"]["hostname"] == host and pod["spec"]["subdomain"] == f"di-{name}"
        # Argo's wait container and the one dihera adds to collect spec.artifacts carry no DI_* env
        collector = pod["metadata"].get("annotations", {}).get(ANNOTATION_ARTIFACT_COLLECTOR)
        for container in pod["spec"]["containers"]:
            if container["name"] in ("wait", collector):
                continue
            env = {e["name"]: e.get("value") or cm[e["valueFrom"]["configMapKeyRef"]["key"]] for e in container["env"]}
            assert env["DI_RANK"] == str(rank)
            assert env["DI_FQDN"] == f"{host}.{domain}"
            assert env["DI_NODES"].split(",")[rank] == env["DI_FQDN"]

    tasks: dict[str, int] = {}
    for t, _ in order:
        tasks[t] = tasks.get(t, 0) + 1
    assert status["taskStatus"] == {t: {"Succeeded": n} for t, n in tasks.items()}
    assert status["replicas"] == len(order) and status["restarts"] == 0
    assert status["completionTimestamp"] and status["workflowName"] == name and status["observedGeneration"] == 1
    conds = status["conditions"]
    assert [c["type"] for c in conds if c["status"] == "True"] == ["Succeeded"]
    assert conds[0]["type"] == "Pending" and all(c["reason"] == f"Job{c['type']}" for c in conds)

    def events() -> set[str] | None:
        reasons = {r for r, _ in dijob_events(cluster, namespace, name)}
        return reasons if {"JobPending", "JobSucceeded"} <= reasons else None

    poll(events, 30, "JobPending and JobSucceeded events")


@pytest.mark.compat
def test_collector_failing_once_is_restarted_in_place(
    controller: Controller, cluster: client.ApiClient, namespace: str, poll: Poll
) -> None:
    jobs = JobStore(cluster)
    flaky = task("collector", 2, **{"sim.dihera.io/fail-attempts": "1", "sim.dihera.io/exit-code": "7"})
    flaky["template"]["metadata"]["annotations"]["sim.dihera.io/run-seconds"] = "3"
    jobs.create(manifest("flaky", namespace, task("learner"), flaky, backoffLimit=3))
    status = poll(phase_is(jobs, namespace, "flaky", "Succeeded"), 120, "flaky Succeeded")
    assert status["restarts"] == 2  # each collector failed once
    pods = job_pods(cluster, namespace, "flaky")
    attempts: dict[str, list[tuple[str, str, str, str]]] = {}
    for p in pods:
        meta = p["metadata"]
        main = next(c for c in p["spec"]["containers"] if c["name"] != "wait")
        attempts.setdefault(meta["labels"]["diengine/pod"], []).append(
            (
                meta["annotations"]["workflows.argoproj.io/node-name"],
                p["spec"]["hostname"],
                meta["annotations"]["diengine/rank"],
                next(e["value"] for e in main["env"] if e["name"] == "DI_RESTART_COUNT"),
            )
        )
    for index, rank in ((0, "1"), (1, "2")):
        seen = sorted(attempts[f"flaky-collector-{index}"])
        assert [n for n, _, _, _ in seen] == [f"flaky.collector-{index}(0)", f"flaky.collector-{index}(1)"]
        assert {(h, r) for _, h, r, _ in seen} == {(f"flaky-collector-{index}", rank)}  # same hostname (FQDN), rank
        assert [c for _, _, _, c in seen] == ["0", "1"]  # DI_RESTART_COUNT: Argo's retry number of the node

    def restarted() -> bool:  # Events are sent in the background (dihera/kube/events.py): poll
        return "ReplicaRestarted" in [r for r, _ in dijob_events(cluster, namespace, "flaky")]

    poll(restarted, 30, "ReplicaRestarted Event")


def test_collector_always_failing_fails_the_job_naming_the_replica(
    controller: Controller, cluster: client.ApiClient, namespace: str, poll: Poll
) -> None:
    jobs = JobStore(cluster)
    bad = task("collector", 2, name="collector")
    bad["template"]["metadata"]["annotations"]["sim.dihera.io/fail-attempts"] = "100"
    bad["template"]["metadata"]["annotations"]["sim.dihera.io/exit-code"] = "3"
    bad["template"]["metadata"]["annotations"]["sim.dihera.io/run-seconds"] = "1"
    slow = task("learner")
    slow["template"]["metadata"]["annotations"]["sim.dihera.io/run-seconds"] = "600"
    jobs.create(manifest("doomed", namespace, slow, bad, backoffLimit=1, cleanPodPolicy="Running"))
    status = poll(phase_is(jobs, namespace, "doomed", "Failed"), 120, "doomed Failed")
    message = status["conditions"][-1]["message"]
    assert "replica collector-" in message and "exit code 3" in message, message
    assert "backoffLimit 1" in message
    assert status["completionTimestamp"]
    # cleanPodPolicy Running: the learner still running is deleted, the failed collectors stay.
    poll(
        lambda: (
            not [p for p in job_pods(cluster, namespace, "doomed") if p["status"]["phase"] in ("Running", "Pending")]
        ),
        60,
        "no Pending/Running pod left",
    )
    wf = ObjectStore(cluster).get_workflow(namespace, "doomed")
    assert wf is not None and wf["spec"].get("shutdown") == "Terminate"
    # The event is posted right after the status write the poll above saw: wait for it, do not race it.
    poll(
        lambda: any(r == "BackoffLimitExceeded" for r, _ in dijob_events(cluster, namespace, "doomed")),
        30,
        "a BackoffLimitExceeded event",
    )


@pytest.mark.compat
@pytest.mark.parametrize(("policy", "left"), [("All", set()), ("None", {"Running", "Failed"}), ("Running", {"Failed"})])
def test_clean_pod_policy(
    policy: str, left: set[str], controller: Controller, cluster: client.ApiClient, namespace: str, poll: Poll
) -> None:
    jobs = JobStore(cluster)
    slow = task("learner")
    slow["template"]["metadata"]["annotations"]["sim.dihera.io/run-seconds"] = "600"
    failing = task("collector", **{"sim.dihera.io/exit-code": "2", "sim.dihera.io/run-seconds": "1"})
    jobs.create(manifest("clean", namespace, slow, failing, backoffLimit=0, cleanPodPolicy=policy))
    poll(phase_is(jobs, namespace, "clean", "Failed"), 90, "clean Failed")

    def phases() -> set[str] | None:
        now = {
            p["status"]["phase"]
            for p in job_pods(cluster, namespace, "clean")
            if not p["metadata"].get("deletionTimestamp")
        }
        return now if now == left else None

    poll(lambda: phases() is not None, 60, f"pods left by cleanPodPolicy {policy} to be {left or 'none'}")


def test_deleting_a_job_leaves_nothing_behind(
    controller: Controller, cluster: client.ApiClient, namespace: str, poll: Poll
) -> None:
    jobs = JobStore(cluster)
    slow = task("learner", 2)
    slow["template"]["metadata"]["annotations"]["sim.dihera.io/run-seconds"] = "600"
    jobs.create(manifest("gone", namespace, slow))
    poll(phase_is(jobs, namespace, "gone", "Running"), 60, "gone Running")
    jobs.delete(namespace, "gone")
    core, objects = client.CoreV1Api(cluster), ObjectStore(cluster)

    def nothing_left() -> bool:
        return (
            objects.get_workflow(namespace, "gone") is None
            and objects.get_configmap(namespace, "di-gone") is None
            and not core.list_namespaced_service(namespace).items
            and not job_pods(cluster, namespace, "gone")
        )

    poll(nothing_left, 90, "Workflow, ConfigMap, Service and pods of a deleted DIJob to be gone")


def test_workflow_deleted_by_hand_fails_the_job(
    controller: Controller, cluster: client.ApiClient, namespace: str, poll: Poll
) -> None:
    jobs = JobStore(cluster)
    slow = task("learner")
    slow["template"]["metadata"]["annotations"]["sim.dihera.io/run-seconds"] = "600"
    jobs.create(manifest("orphan", namespace, slow))
    poll(phase_is(jobs, namespace, "orphan", "Running"), 60, "orphan Running")
    client.CustomObjectsApi(cluster).delete_namespaced_custom_object(
        "argoproj.io", "v1alpha1", namespace, "workflows", "orphan"
    )
    status = poll(phase_is(jobs, namespace, "orphan", "Failed"), 60, "orphan Failed")
    assert "was deleted" in status["conditions"][-1]["message"]
    assert ObjectStore(cluster).get_workflow(namespace, "orphan") is None  # never recreated


def test_controller_killed_mid_job_converges_without_a_second_workflow(
    controller: Controller, cluster: client.ApiClient, namespace: str, poll: Poll
) -> None:
    jobs = JobStore(cluster)
    work = task("collector", 3)
    work["template"]["metadata"]["annotations"]["sim.dihera.io/run-seconds"] = "8"
    jobs.create(manifest("survivor", namespace, task("learner"), work))
    poll(lambda: ObjectStore(cluster).get_workflow(namespace, "survivor"), 30, "the Workflow")
    controller.kill(signal.SIGKILL)
    first_uid = ObjectStore(cluster).get_workflow(namespace, "survivor")["metadata"]["uid"]  # type: ignore[index]
    controller.start()
    status = poll(phase_is(jobs, namespace, "survivor", "Succeeded"), 120, "survivor Succeeded after a restart")
    wfs = client.CustomObjectsApi(cluster).list_namespaced_custom_object(
        "argoproj.io", "v1alpha1", namespace, "workflows"
    )
    assert [w["metadata"]["uid"] for w in wfs["items"]] == [first_uid]
    assert status["taskStatus"] == {"learner": {"Succeeded": 1}, "collector": {"Succeeded": 3}}


def test_metrics_endpoint(controller: Controller, cluster: client.ApiClient, namespace: str, poll: Poll) -> None:
    import urllib.request

    jobs = JobStore(cluster)
    jobs.create(manifest("counted", namespace, task("learner")))
    poll(phase_is(jobs, namespace, "counted", "Succeeded"), 60, "counted Succeeded")

    def scrape() -> str | None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{controller.metrics_port}/metrics", timeout=5) as resp:
                return str(resp.read().decode())
        except OSError:
            return None

    text = poll(lambda: (t := scrape()) and 'dihera_jobs{phase="Succeeded"} 1.0' in t and t, 30, "metrics")
    assert "dihera_reconcile_duration_seconds_count" in text and "dihera_reconcile_errors_total" in text


def _foreign(kind: str, name: str, namespace: str, **labels: str) -> dict[str, Any]:
    """A Service or ConfigMap ``name`` that nobody owns (someone else's, created before the DIJob); the Service
    headless, like the job's, so nothing but ownership keeps the controller from writing its own spec over it."""
    meta = {"name": name, "namespace": namespace, "labels": {"app": "web", **labels}}
    if kind == "Service":
        spec = {"clusterIP": "None", "selector": {"app": "web"}, "ports": [{"name": "http", "port": 80}]}
        return {"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": spec}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"owner": "web"}}


def _conflict(jobs: JobStore, namespace: str, name: str) -> Callable[[], dict[str, Any] | None]:
    """The DIJob's True condition once it is Pending with reason ObjectConflict."""

    def check() -> dict[str, Any] | None:
        status = (jobs.get(namespace, name) or {}).get("status") or {}
        current = [c for c in status.get("conditions") or [] if c.get("status") == "True"]
        ok = status.get("phase") == "Pending" and current and current[-1].get("reason") == "ObjectConflict"
        return current[-1] if ok else None

    return check


def test_a_foreign_service_or_configmap_under_the_jobs_name_is_left_untouched_until_it_goes(
    controller: Controller, cluster: client.ApiClient, namespace: str, poll: Poll
) -> None:
    """Someone's Service ``di-squat`` (unlabelled: the controller's watch never sees it) and someone's ConfigMap
    ``di-squat-cm`` (labelled like the job's: in the watch cache) exist before the DIJobs that need their names:
    each is left byte for byte as it was, the DIJob is Pending with reason ObjectConflict and a Warning Event
    naming the object and its owner, and no Workflow runs. Deleting the Service lets its job go on."""
    core, jobs, objects = client.CoreV1Api(cluster), JobStore(cluster), ObjectStore(cluster)
    core.create_namespaced_service(namespace, _foreign("Service", "di-squat", namespace))
    labels = {"diengine/job": "squat-cm", "app.kubernetes.io/managed-by": "dihera"}
    core.create_namespaced_config_map(namespace, _foreign("ConfigMap", "di-squat-cm", namespace, **labels))
    before = {
        "Service": cluster.sanitize_for_serialization(core.read_namespaced_service("di-squat", namespace)),
        "ConfigMap": cluster.sanitize_for_serialization(core.read_namespaced_config_map("di-squat-cm", namespace)),
    }
    for name in ("squat", "squat-cm"):
        jobs.create(manifest(name, namespace, task("learner", **{"sim.dihera.io/run-seconds": "5"})))
    held = {n: poll(_conflict(jobs, namespace, n), 60, f"{n} Pending, ObjectConflict") for n in ("squat", "squat-cm")}
    assert held["squat"]["message"].startswith("a Service di-squat that this DIJob does not own exists (no owner)")
    assert held["squat-cm"]["message"].startswith("a ConfigMap di-squat-cm that this DIJob does not own exists")
    time.sleep(6)  # a backoff pass or two later: still untouched
    after = {
        "Service": cluster.sanitize_for_serialization(core.read_namespaced_service("di-squat", namespace)),
        "ConfigMap": cluster.sanitize_for_serialization(core.read_namespaced_config_map("di-squat-cm", namespace)),
    }
    assert after == before  # spec, selector, labels, no ownerReferences, the same resourceVersion
    assert objects.get_workflow(namespace, "squat") is None and objects.get_workflow(namespace, "squat-cm") is None
    events = dijob_events(cluster, namespace, "squat")
    warned = [m for r, m in events if r == "ObjectConflict"]
    assert len(warned) == 1 and "Service di-squat" in warned[0] and "(no owner)" in warned[0], events
    kinds = {
        e.reason: e.type
        for e in core.list_namespaced_event(namespace, field_selector="involvedObject.name=squat").items
    }
    assert kinds["ObjectConflict"] == "Warning"

    core.delete_namespaced_service("di-squat", namespace)  # the name is free: the job goes on (a backoff pass)
    poll(phase_is(jobs, namespace, "squat", "Succeeded"), 120, "squat Succeeded once the Service is gone")
    mine = core.read_namespaced_service("di-squat", namespace)
    assert [(o.kind, o.name, o.controller) for o in mine.metadata.owner_references] == [("DIJob", "squat", True)]
