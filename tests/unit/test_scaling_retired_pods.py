"""The pods of retired replicas are deleted only once Argo has finished their tombstone (the DAG task's node)."""

from __future__ import annotations

import base64
import copy
import gzip
import json
from typing import Any

import pytest

from dihera.scaling import RetiredPods, ScaleRequest, plan_scale, retired_pods
from tests.unit.test_scaling import _apply, _state


def _retired_workflow(nodes: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """Job ``j`` (learner, 2 collectors, evaluator) with collector-1 retired, and ``nodes`` as its status."""
    job, membership, workflow = _state()
    down = plan_scale(job, membership, workflow, ScaleRequest.remove("collector", 1))
    patched = _apply(workflow, down.membership)
    if nodes is not None:
        patched["status"] = {"nodes": nodes}
    return patched


def _node(name: str, phase: str, type_: str = "Retry") -> dict[str, str]:
    return {"name": name, "type": type_, "phase": phase}


def _pod(name: str, host: str, phase: str = "Running", deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {"diengine/pod": host}}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta, "status": {"phase": phase}}


POD = [_pod("p", "j-collector-1")]
RUNNING = {"a": _node("j.collector-1", "Running"), "b": _node("j.collector-1(0)", "Running", "Pod")}


@pytest.mark.parametrize(
    ("case", "nodes", "expected"),
    [
        # the patch is written, Argo has not operated on it yet: deleting now would make Argo start the pod again
        ("no status yet", None, RetiredPods(waiting=("p",))),
        ("Argo has not acted on the patch", RUNNING, RetiredPods(waiting=("p",))),
        (
            "only the attempt finished: the DAG task's node decides",
            {"a": _node("j.collector-1", "Running"), "b": _node("j.collector-1(0)", "Succeeded", "Pod")},
            RetiredPods(waiting=("p",)),
        ),
        (
            "the tombstone is Succeeded (Argo ran dihera-retired)",
            {**RUNNING, "a": _node("j.collector-1", "Succeeded")},
            RetiredPods(ready=("p",)),
        ),
        (
            "without retries the DAG task's node is the Pod node",
            {"b": _node("j.collector-1", "Succeeded", "Pod")},
            RetiredPods(ready=("p",)),
        ),
        ("finished before it was retired", {"a": _node("j.collector-1", "Failed")}, RetiredPods(ready=("p",))),
        (
            "another replica's finished node does not count",
            {**RUNNING, "c": _node("j.collector-0", "Succeeded")},
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
        _pod("a", "j-collector-0"),
        _pod("b", "j-collector-1"),
        _pod("c", "j-collector-1", phase="Failed"),
        _pod("d", "j-collector-1", deleting=True),
        _pod("e", "j-learner-0"),
    ]
    done = _retired_workflow({"a": _node("j.collector-1", "Succeeded")})
    assert retired_pods("j", done, pods) == RetiredPods(ready=("b",))
    _, _, before = _state()  # nothing retired: nothing to delete, whatever the nodes say
    before["status"] = copy.deepcopy(done["status"])
    assert retired_pods("j", before, pods) == RetiredPods()


def test_nodes_moved_to_compressed_nodes_are_read() -> None:
    done = _retired_workflow()
    nodes = {"a": _node("j.collector-1", "Succeeded")}
    done["status"] = {"compressedNodes": base64.b64encode(gzip.compress(json.dumps(nodes).encode())).decode()}
    assert retired_pods("j", done, POD) == RetiredPods(ready=("p",))
