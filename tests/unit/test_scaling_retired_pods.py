"""The pods of retired replicas are deleted only once Argo has finished their tombstone (the DAG task's node)."""

from __future__ import annotations

import base64
import copy
import gzip
import json
from typing import Any

import pytest

from dihera.scaling import RetiredPods, ScaleRequest, plan_scale, retired_pods
from tests.builders import PodBuilder, pod_node, retry_node
from tests.unit.scaled_job import base_state, patched_workflow


def _retired_workflow(nodes: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """Job ``j`` (learner, 2 collectors, evaluator) with collector-1 retired, and ``nodes`` as its status."""
    job, membership, workflow = base_state()
    down = plan_scale(job, membership, workflow, ScaleRequest.remove("collector", 1))
    patched = patched_workflow(workflow, down.membership)
    patched["metadata"]["uid"] = "wf-uid"
    if nodes is not None:
        patched["status"] = {"nodes": nodes}
    return patched


def replica_pod(name: str, host: str) -> PodBuilder:
    """A pod of job j's replica ``host``, owned by its Workflow (uid ``wf-uid``)."""
    return PodBuilder(name).uid(f"uid-{name}").host(host).owner("wf-uid")


POD = [replica_pod("p", "j-collector-1").phase("Running").obj()]
RUNNING = {"a": retry_node("j.collector-1", "Running"), "b": pod_node("j.collector-1(0)", "Running")}


@pytest.mark.parametrize(
    ("case", "nodes", "expected"),
    [
        # the patch is written, Argo has not operated on it yet: deleting now would make Argo start the pod again
        ("no status yet", None, RetiredPods(waiting=("p",))),
        ("Argo has not acted on the patch", RUNNING, RetiredPods(waiting=("p",))),
        (
            "only the attempt finished: the DAG task's node decides",
            {"a": retry_node("j.collector-1", "Running"), "b": pod_node("j.collector-1(0)", "Succeeded")},
            RetiredPods(waiting=("p",)),
        ),
        (
            "the tombstone is Succeeded (Argo ran dihera-retired)",
            {**RUNNING, "a": retry_node("j.collector-1", "Succeeded")},
            RetiredPods(ready=("p",)),
        ),
        (
            "without retries the DAG task's node is the Pod node",
            {"b": pod_node("j.collector-1", "Succeeded")},
            RetiredPods(ready=("p",)),
        ),
        ("finished before it was retired", {"a": retry_node("j.collector-1", "Failed")}, RetiredPods(ready=("p",))),
        (
            "another replica's finished node does not count",
            {**RUNNING, "c": retry_node("j.collector-0", "Succeeded")},
            RetiredPods(waiting=("p",)),
        ),
    ],
)
def test_a_retired_replicas_pod_waits_for_argo_to_finish_its_tombstone(
    case: str, nodes: dict[str, dict[str, Any]] | None, expected: RetiredPods
) -> None:
    assert retired_pods("j", _retired_workflow(nodes), POD) == expected, case


def test_only_live_pods_of_retired_replicas_are_listed() -> None:
    pods = [
        replica_pod("a", "j-collector-0").phase("Running").obj(),
        replica_pod("b", "j-collector-1").phase("Running").obj(),
        replica_pod("c", "j-collector-1").phase("Failed").obj(),
        replica_pod("d", "j-collector-1").phase("Running").deleting().obj(),
        replica_pod("e", "j-learner-0").phase("Running").obj(),
    ]
    done = _retired_workflow({"a": retry_node("j.collector-1", "Succeeded")})
    assert retired_pods("j", done, pods) == RetiredPods(ready=("b",))
    _, _, before = base_state()  # nothing retired: nothing to delete, whatever the nodes say
    before["status"] = copy.deepcopy(done["status"])
    assert retired_pods("j", before, pods) == RetiredPods()


def test_a_pod_not_owned_by_the_workflow_is_never_the_jobs_whatever_its_labels() -> None:
    """A pod someone labelled like the retired replica (no owner, another Workflow's, an earlier Workflow of the
    same name's) is not listed; each listed pod comes with its uid, its deletion's precondition."""
    pods = [
        replica_pod("b", "j-collector-1").phase("Running").obj(),
        PodBuilder("planted").uid("u1").host("j-collector-1").phase("Running").obj(),
        PodBuilder("other").uid("u2").host("j-collector-1").owner("another-wf").phase("Running").obj(),
    ]
    done = _retired_workflow({"a": retry_node("j.collector-1", "Succeeded")})
    found = retired_pods("j", done, pods)
    assert found == RetiredPods(ready=("b",)) and dict(found.uids) == {"b": "uid-b"}


def test_nodes_moved_to_compressed_nodes_are_read() -> None:
    done = _retired_workflow()
    nodes = {"a": retry_node("j.collector-1", "Succeeded")}
    done["status"] = {"compressedNodes": base64.b64encode(gzip.compress(json.dumps(nodes).encode())).decode()}
    assert retired_pods("j", done, POD) == RetiredPods(ready=("p",))
