"""The test builders (tests/builders/) make the objects they say, field for field, and a fresh copy each time."""

from __future__ import annotations

from dihera import load_job
from dihera.membership import Membership, Replica
from tests.builders import (
    ConfigMapBuilder,
    DIJobBuilder,
    PodBuilder,
    TaskBuilder,
    WorkflowBuilder,
    job,
    pod_node,
    retry_node,
    task,
)


def test_a_pod_holds_only_what_was_asked() -> None:
    assert PodBuilder("p").obj() == {"metadata": {"name": "p"}}
    pod = (
        PodBuilder("j-collector-1-1")
        .namespace("ns")
        .uid("u")
        .version("7")
        .job("j")
        .replica("j", "collector", 1, attempt=1)
        .owner("wf-uid")
        .created("t0")
        .deleting()
        .phase("Failed")
        .ready(False)
        .terminated("wait", 0)
        .terminated("main", 137, reason="OOMKilled")
        .obj()
    )
    assert pod == {
        "metadata": {
            "name": "j-collector-1-1",
            "namespace": "ns",
            "uid": "u",
            "resourceVersion": "7",
            "labels": {"diengine/job": "j", "diengine/pod": "j-collector-1"},
            "annotations": {"workflows.argoproj.io/node-name": "j.collector-1(1)"},
            "ownerReferences": [{"uid": "wf-uid"}],
            "creationTimestamp": "t0",
            "deletionTimestamp": "2026-01-01T00:00:00Z",
        },
        "status": {
            "phase": "Failed",
            "conditions": [{"type": "Ready", "status": "False"}],
            "containerStatuses": [
                {"name": "wait", "state": {"terminated": {"exitCode": 0}}},
                {"name": "main", "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}},
            ],
        },
    }


def test_a_replicas_node_name_has_an_attempt_only_when_given() -> None:
    first = PodBuilder("p").replica("j", "learner", 0).obj()
    assert first["metadata"]["annotations"] == {"workflows.argoproj.io/node-name": "j.learner-0"}
    waiting = PodBuilder("p").waiting("main", "CrashLoopBackOff", "back-off").running("side").obj()
    assert waiting["status"]["containerStatuses"] == [
        {"name": "main", "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off"}}},
        {"name": "side", "state": {"running": {}}},
    ]


def test_a_workflow_has_its_entry_dag_and_status_once_asked() -> None:
    assert WorkflowBuilder("j").obj() == {"metadata": {"name": "j"}}
    membership = Membership(2, (Replica(0, "learner", 0), Replica(1, "collector", 0), Replica(2, "collector", 1)))
    wf = (
        WorkflowBuilder("j")
        .membership_generation(2)
        .dag(membership, retired={"collector-1"})
        .phase("Running")
        .node("a", retry_node("j.collector-1", "Succeeded"))
        .node("b", pod_node("j.collector-1(0)", "Error", message="pod deleted"))
        .obj()
    )
    assert wf == {
        "metadata": {"name": "j", "annotations": {"diengine/membership-generation": "2"}},
        "spec": {
            "templates": [
                {
                    "name": "dijob",
                    "dag": {
                        "tasks": [
                            {"name": "learner-0", "template": "learner"},
                            {"name": "collector-0", "template": "collector"},
                            {"name": "collector-1", "template": "dihera-retired"},
                        ]
                    },
                }
            ]
        },
        "status": {
            "phase": "Running",
            "nodes": {
                "a": {"name": "j.collector-1", "type": "Retry", "phase": "Succeeded"},
                "b": {"name": "j.collector-1(0)", "type": "Pod", "phase": "Error", "message": "pod deleted"},
            },
        },
    }
    assert WorkflowBuilder("j").dag([("learner", 0)]).obj() == WorkflowBuilder("j").replica("learner", 0).obj()


def test_a_dijob_is_a_valid_manifest_with_one_learner_unless_given_tasks() -> None:
    assert job() == DIJobBuilder().obj()
    assert job()["spec"]["tasks"] == [task("learner")]
    assert load_job(job(task("learner"), task("collector", replicas=2), name="dqn")).name == "dqn"
    collector = TaskBuilder("collector").replicas(2).name("c").annotation("a", "1").command("ditask")
    body = (
        DIJobBuilder("j")
        .namespace("ns")
        .generation(2)
        .membership_generation(1)
        .task(collector.fields(failurePolicy="DropReplica"))
        .spec(maxReplicas=4)
        .status(phase="Running")
        .obj()
    )
    assert body == {
        "apiVersion": "diengine.opendilab.org/v2alpha1",
        "kind": "DIJob",
        "metadata": {
            "name": "j",
            "namespace": "ns",
            "generation": 2,
            "annotations": {"diengine/membership-generation": "1"},
        },
        "spec": {
            "maxReplicas": 4,
            "tasks": [
                {
                    "type": "collector",
                    "replicas": 2,
                    "name": "c",
                    "failurePolicy": "DropReplica",
                    "template": {
                        "metadata": {"annotations": {"a": "1"}},
                        "spec": {
                            "containers": [{"name": "main", "image": "opendilab/ding:nightly", "command": ["ditask"]}]
                        },
                    },
                }
            ],
        },
        "status": {"phase": "Running"},
    }


def test_a_configmap_carries_the_membership_as_rendered() -> None:
    membership = Membership(1, (Replica(0, "learner", 0),))
    cm = ConfigMapBuilder("di-j").job("j").membership(membership).data(DI_RANK="0").obj()
    assert cm == {
        "metadata": {"name": "di-j", "labels": {"diengine/job": "j"}},
        "data": {"membership.json": membership.to_json(), "DI_RANK": "0"},
    }


def test_obj_is_a_fresh_copy_each_time() -> None:
    pod = PodBuilder("p").phase("Running")
    first = pod.obj()
    first["status"]["phase"] = "Failed"
    first["metadata"]["name"] = "q"
    assert pod.obj() == {"metadata": {"name": "p"}, "status": {"phase": "Running"}}
    learner = task("learner")
    body = job(learner)
    learner["replicas"] = 5
    assert "replicas" not in body["spec"]["tasks"][0]
