"""The watch cache's slim objects lead to the same decisions as the objects the API server serves."""

from __future__ import annotations

import base64
import copy
import dataclasses
import gzip
import json
import zlib
from typing import Any

import pytest

from dihera.controller.decide.cleanup import plan_cleanup
from dihera.kube.watch.slim import slim_configmap, slim_dijob, slim_pod, slim_workflow
from dihera.model import CleanPodPolicy
from dihera.scaling.retired_pods import retired_pods
from dihera.scaling.spec_edit import plan_spec_edit
from dihera.validation import load_job
from tests.builders import job, pod_node, retry_node, task
from tests.unit.jobviews import (
    ALWAYS_FAILS,
    FAILED_ONCE,
    GROWN,
    JOB,
    RETIRED_NODES,
    RETRIED,
    SHRUNK,
    T1,
    Observed,
    observe,
    pod,
    running,
    status_after,
    workflow,
)

MANAGED = [{"manager": "kubelet", "operation": "Update", "fieldsV1": {"f:status": {"f:phase": {}}}}]


def dressed_pod(p: dict[str, Any], memory: str | None = "48Mi") -> dict[str, Any]:
    """``p`` with what the API server adds: managedFields, the full spec, container details."""
    full = copy.deepcopy(p)
    meta = full["metadata"]
    meta.update(managedFields=MANAGED, uid=f"uid-{meta['name']}", namespace="ns")
    meta["annotations"] = {**meta.get("annotations", {}), "diengine/rank": "1", "big": "x" * 1000}
    main = {"name": "main", "image": "ding", "env": [{"name": "DI_NODES", "value": "y" * 5000}]}
    if memory:
        main["resources"] = {"limits": {"memory": memory, "cpu": "1"}, "requests": {"cpu": "1"}}
    full["spec"] = {"initContainers": [{"name": "init", "image": "argoexec"}], "containers": [main], "nodeName": "n"}
    status = full["status"]
    status.update(hostIP="10.0.0.1", podIP="10.0.0.2", startTime="t", qosClass="Burstable")
    for cs in status.get("containerStatuses") or []:
        cs.update(image="ding", imageID="sha256:1", containerID="containerd://1", restartCount=0)
    # as on the API server, another content is another version (decisions remember a pod by its version)
    meta["resourceVersion"] = str(zlib.crc32(json.dumps(full, sort_keys=True).encode()))
    return full


def dressed_workflow(wf: dict[str, Any] | None) -> dict[str, Any] | None:
    if wf is None:
        return None
    full = copy.deepcopy(wf)
    full["metadata"].update(managedFields=MANAGED, namespace="ns")
    for t in full["spec"]["templates"]:
        for dag_task in (t.get("dag") or {}).get("tasks") or []:
            dag_task["arguments"] = {"parameters": [{"name": "rank", "value": "1"}]}
    full["spec"]["templates"].append({"name": "collector", "container": {"image": "ding", "env": [{"name": "A"}]}})
    nodes = full["status"].setdefault("nodes", {})
    nodes["dag"] = {"name": "job", "type": "DAG", "phase": "Running", "children": list(nodes)}
    for node in nodes.values():
        node.update(inputs={"parameters": [{"name": "rank", "value": "1"}]}, startedAt="t", hostNodeName="n")
    # as the API server's: another content is another version (what is worked out is remembered per version)
    full["metadata"]["resourceVersion"] = str(zlib.crc32(json.dumps(full, sort_keys=True).encode()))
    return full


def slimmed(obs: Observed) -> tuple[Observed, Observed]:
    """The observation with dressed objects, and the same through the slimmers."""
    pods = [dressed_pod(p) for p in obs.pods]
    wf = dressed_workflow(dict(obs.workflow) if obs.workflow is not None else None)
    full = dataclasses.replace(obs, pods=pods, workflow=wf)
    slim_wf = slim_workflow(wf) if wf is not None else None
    return full, dataclasses.replace(obs, pods=[slim_pod(p) for p in pods], workflow=slim_wf)


OOM = {
    **pod("collector", 1, "Failed", False, code=137),
    "status": {
        "phase": "Failed",
        "containerStatuses": [{"name": "main", "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}],
    },
}
UNSCHEDULABLE = {
    **pod("collector", 1, "Pending", False),
    "status": {
        "phase": "Pending",
        "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/3 nodes"}],
    },
}
PULL = {
    **pod("collector", 1, "Pending", False),
    "status": {
        "phase": "Pending",
        "containerStatuses": [{"name": "main", "state": {"waiting": {"reason": "ImagePullBackOff", "message": "no"}}}],
    },
}


@pytest.mark.parametrize(
    ("obs", "old"),
    [
        (observe(workflow(), running()), {}),
        (observe(workflow(), running(("collector", 1))), {"phase": "Running", "membershipGeneration": 1}),
        (observe(workflow(), FAILED_ONCE, backoff=1), {}),
        (observe(workflow(), RETRIED, backoff=1), {}),
        (observe(workflow(), ALWAYS_FAILS, backoff=1), {}),
        (observe(workflow("Failed", message="boom"), running()), {}),
        (observe(workflow("Succeeded"), []), {}),
        (observe(workflow(), [*running(), pod("collector", 2, "Pending", False)], membership=GROWN), {}),
        (
            observe(
                workflow(retired=("collector-1",), nodes=RETIRED_NODES), running(("collector", 1)), membership=SHRUNK
            ),
            {"phase": "Running", "membershipGeneration": 1},
        ),
        (observe(workflow(), [*running(("collector", 1)), OOM]), {}),
        (observe(workflow(), [*running(("collector", 1)), UNSCHEDULABLE]), {}),
        (observe(workflow(), [*running(("collector", 1)), PULL]), {}),
    ],
)
def test_status_from_slim_objects_is_the_status_from_full_ones(obs: Observed, old: dict[str, Any]) -> None:
    full, slim = slimmed(obs)
    assert status_after(slim, old, T1) == status_after(full, old, T1)


def test_the_oom_message_still_names_the_memory_limit() -> None:
    _, slim = slimmed(observe(workflow(), [*running(("collector", 1)), OOM]))
    message = status_after(slim, {}, T1).status["conditions"][-1]["message"]
    assert "memory limit 48Mi" in message


@pytest.mark.parametrize("policy", list(CleanPodPolicy))
@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_cleanup_from_slim_objects_is_the_cleanup_from_full_ones(policy: CleanPodPolicy, phase: str) -> None:
    pods = [dressed_pod(p) for p in [*running(("collector", 1)), pod("collector", 1, "Succeeded", False)]]
    wf = dressed_workflow(workflow())
    assert wf is not None
    stopped = {**wf, "spec": {**wf["spec"], "shutdown": "Terminate"}}
    for w in (wf, stopped):
        assert plan_cleanup(policy, phase, slim_workflow(w), [slim_pod(p) for p in pods]) == plan_cleanup(
            policy, phase, w, pods
        )


def test_a_hand_edit_is_planned_the_same_from_a_slim_dijob_and_workflow() -> None:
    body = job(task("learner", replicas=1), task("collector", replicas=3), name="job")
    body["metadata"].update(namespace="ns", uid="u", generation=2, managedFields=MANAGED)
    body["metadata"]["annotations"] = {"kubectl.kubernetes.io/last-applied-configuration": "{}" * 500}
    body["status"] = {"observedGeneration": 1, "membershipGeneration": 1}
    wf = dressed_workflow(workflow(retired=("collector-1",)))
    assert wf is not None
    slim_body = slim_dijob(body)
    assert "managedFields" not in slim_body["metadata"] and "annotations" not in slim_body["metadata"]
    full_plan = plan_spec_edit(load_job(body), 1, 2, 1, GROWN, wf)
    assert plan_spec_edit(load_job(slim_body), 1, 2, 1, GROWN, slim_workflow(wf)) == full_plan


def test_a_configmap_keeps_its_data_and_identity_only() -> None:
    cm = {
        "metadata": {
            "name": "j-membership",
            "namespace": "ns",
            "uid": "c",
            "resourceVersion": "3",
            "managedFields": MANAGED,
        },
        "data": {"membership.json": "{}"},
    }
    assert slim_configmap(cm) == {
        "metadata": {"name": "j-membership", "namespace": "ns", "uid": "c", "resourceVersion": "3"},
        "data": {"membership.json": "{}"},
    }


def test_slim_objects_are_much_smaller() -> None:
    full = dressed_pod(pod("collector", 1))
    assert len(repr(slim_pod(full))) * 5 < len(repr(full))


def test_a_big_workflows_compressed_nodes_are_unpacked_into_its_slim_copy() -> None:
    """Past 1 MiB Argo keeps the nodes only in status.compressedNodes: the cache's copy must still have them."""
    nodes = {
        "a": retry_node("j.collector-1", "Running"),
        "b": pod_node("j.collector-1(0)", "Failed", message="OOMKilled"),
        "c": pod_node("j.collector-1(1)", "Pending", hostNodeName="kwok-0"),
    }
    packed = workflow()
    packed["status"]["compressedNodes"] = base64.b64encode(gzip.compress(json.dumps(nodes).encode())).decode()
    assert slim_workflow(packed)["status"]["nodes"] == {
        "b": pod_node("j.collector-1(0)", "Failed", message="OOMKilled"),
        "c": pod_node("j.collector-1(1)", "Pending"),
    }
    assert "compressedNodes" not in slim_workflow(packed)["status"]


@pytest.mark.parametrize("tombstone", ["Running", "Succeeded"])
def test_the_retired_pods_to_delete_are_the_same_from_slim_objects(tombstone: str) -> None:
    """The cache keeps the node of a retired DAG task (a Retry node, not a Pod one): whether Argo finished it."""
    nodes = {
        "a": retry_node(f"{JOB}.collector-1", tombstone, inputs={}),
        "b": pod_node(f"{JOB}.collector-1(0)", "Running"),
        "c": retry_node(f"{JOB}.collector-0", "Running"),
    }
    wf = dressed_workflow(workflow(retired=("collector-1",), nodes=nodes))
    assert wf is not None
    pods = [dressed_pod(p) for p in running()]
    for p in pods:  # the Workflow's pods (only those are ever the job's)
        p["metadata"]["ownerReferences"] = [{"kind": "Workflow", "name": JOB, "uid": "wf", "controller": True}]
    slim = slim_workflow(wf)
    assert set(slim["status"]["nodes"]) == {"a", "b"}  # a live replica's Retry node is not kept
    full = retired_pods(JOB, wf, pods)
    assert retired_pods(JOB, slim, [slim_pod(p) for p in pods]) == full
    assert full.ready == (() if tombstone == "Running" else (f"{JOB}-collector-1-0",))


def test_stored_artifacts_and_the_collector_container_read_the_same_from_slim_objects() -> None:
    """status.artifacts from the Workflow's node outputs, and a finishing pod (its user containers done, the
    artifact collector running) that cleanPodPolicy leaves alone: both need what the slim copies keep."""
    from dihera.constants import ANNOTATION_ARTIFACT_COLLECTOR
    from dihera.controller.decide.outputs import job_artifacts
    from dihera.controller.decide.replicas import finished_ok

    outputs = {
        "artifacts": [
            {"name": "policy", "path": "/w/final.pth.tar", "optional": True, "s3": {"key": "ns/job/p/policy.tgz"}},
            {"name": "main-logs", "s3": {"key": "ns/job/p/main.log", "bucket": "b"}},
        ]
    }
    wf = dressed_workflow(workflow("Running", {"n1": pod_node(f"{JOB}.learner-0(0)", "Running", outputs=outputs)}))
    assert wf is not None
    wanted = [{"name": "policy", "replica": "learner-0", "node": "n1", "key": "ns/job/p/policy.tgz"}]
    assert job_artifacts(slim_workflow(wf), {"policy"}) == job_artifacts(wf, {"policy"}) == wanted
    finishing = dressed_pod(pod("learner", 0))
    finishing["metadata"]["annotations"][ANNOTATION_ARTIFACT_COLLECTOR] = "main"
    finishing["status"]["containerStatuses"] = [
        {"name": "wait", "state": {"running": {}}},
        {"name": "di-container", "state": {"terminated": {"exitCode": 0}}},
        {"name": "main", "state": {"running": {}}},
    ]
    assert finished_ok(slim_pod(finishing)) and finished_ok(finishing)
    for policy in (CleanPodPolicy.ALL, CleanPodPolicy.RUNNING):
        assert plan_cleanup(policy, "Succeeded", wf, [slim_pod(finishing)]).empty


def test_a_slim_pod_holds_only_fields_its_shape_declares() -> None:
    """The cache keeps what dihera.shapes.Pod declares, nothing else: a field not declared is dropped."""
    from dihera.kube.watch.slim import kept_fields
    from dihera.shapes.pod import Pod

    declared = set(kept_fields(Pod))

    def paths(value: Any, prefix: str = "") -> set[str]:
        if isinstance(value, list):
            return {p for v in value for p in paths(v, prefix)}
        if not isinstance(value, dict) or prefix in ("metadata.labels.", "metadata.annotations."):
            return set()
        return {f"{prefix}{k}" for k in value} | {p for k, v in value.items() for p in paths(v, f"{prefix}{k}.")}

    slim = slim_pod(dressed_pod(OOM))
    assert paths(slim) <= declared
    assert "status.containerStatuses.state.terminated.exitCode" in paths(slim)
    assert "spec.containers.resources.limits.memory" in declared


def test_a_shape_with_a_type_the_slimmer_cannot_keep_is_refused() -> None:
    from typing import TypedDict

    from dihera.kube.watch.slim import slimmer

    class Odd(TypedDict, total=False):
        when: float

    with pytest.raises(TypeError, match="float"):
        slimmer(Odd)


def test_a_service_and_a_workload_keep_what_their_shapes_declare() -> None:
    from dihera.kube.watch.slim import slim_service, slim_workload

    ports = [{"name": "p", "port": 1, "targetPort": 1, "protocol": "TCP"}]
    svc = {
        "metadata": {"name": "j", "managedFields": MANAGED},
        "spec": {"clusterIP": "None", "ports": ports, "sessionAffinity": "None"},
    }
    assert slim_service(svc) == {"metadata": {"name": "j"}, "spec": {"clusterIP": "None", "ports": ports}}
    admission = {"clusterQueue": "q", "podSetAssignments": [{"name": "learner", "count": 1}]}
    wl = {
        "metadata": {"name": "w"},
        "spec": {"queueName": "q", "podSets": [{"name": "learner", "count": 1, "template": {"spec": {}}}]},
        "status": {"admission": admission, "requeueState": {"count": 1}},
    }
    assert slim_workload(wl) == {
        "metadata": {"name": "w"},
        "spec": {"queueName": "q", "podSets": [{"name": "learner", "count": 1}]},
        "status": {"admission": admission},
    }
