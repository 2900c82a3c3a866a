"""A pass over a big job works out again only the replicas whose pods or attempt nodes changed.

:func:`replica_states` remembers each replica's state with what it was worked out from (its pods' facts,
by identity: one object per pod version; its attempt nodes, by value) and the attempt nodes of each
Workflow version; these tests hold it to giving the same answers as working everything out again.
"""

from __future__ import annotations

import copy
from typing import Any

from dihera.controller.decide import replicas
from dihera.controller.decide.replicas import ReplicaState, replica_states
from dihera.membership import Membership, Replica
from dihera.objects import VersionMemo
from tests.builders import PodBuilder, WorkflowBuilder, pod_node

JOB = "memo"
MEMBERSHIP = Membership(1, (Replica(0, "learner", 0), Replica(1, "collector", 0), Replica(2, "collector", 1)))


def pod(task: str, index: int, version: str, phase: str = "Running", ready: bool = True) -> dict[str, Any]:
    built = PodBuilder(f"{JOB}-{task}-{index}-1").uid(f"uid-{task}-{index}").version(version)
    built.replica(JOB, task, index, attempt=0).created("2026-01-01T00:00:00Z")
    return built.phase(phase).ready(ready).obj()


def workflow(version: str, **phases: str) -> dict[str, Any]:
    """Each replica's attempt 0 node Running unless ``phases`` says otherwise (``collector_1="Failed"``)."""
    built = WorkflowBuilder(JOB).uid("wf-memo").version(version).dag(MEMBERSHIP).nodes({})
    for r in MEMBERSHIP.replicas:
        name = f"{r.task}-{r.index}"
        built.node(name, pod_node(f"{JOB}.{name}(0)", phases.get(name.replace("-", "_"), "Running"), progress="0/1"))
    return built.obj()


def fresh(wf: dict[str, Any], pods: list[dict[str, Any]]) -> tuple[ReplicaState, ...]:
    """The states worked out from scratch (nothing remembered)."""
    saved = dict(replicas._STATES), replicas._attempt_nodes_of
    replicas._STATES.clear()
    replicas._attempt_nodes_of = VersionMemo(replicas._read_attempt_nodes, kept=64)
    try:
        return replica_states(JOB, MEMBERSHIP, copy.deepcopy(wf), copy.deepcopy(pods))
    finally:
        replicas._STATES.update(saved[0])
        replicas._attempt_nodes_of = saved[1]


def test_an_unchanged_replica_keeps_its_state_and_a_changed_one_is_worked_out_again() -> None:
    pods = [pod("learner", 0, "10"), pod("collector", 0, "11"), pod("collector", 1, "12", "Pending", False)]
    first = replica_states(JOB, MEMBERSHIP, workflow("100"), pods)
    pods[2] = pod("collector", 1, "13")  # the collector's pod runs now: a new version
    second = replica_states(JOB, MEMBERSHIP, workflow("100"), pods)
    assert second[0] is first[0] and second[1] is first[1]
    assert (first[2].pod_phase, second[2].pod_phase, second[2].ready) == ("Pending", "Running", True)
    assert second == fresh(workflow("100"), pods)


def test_a_new_workflow_version_changes_only_the_replicas_whose_nodes_changed() -> None:
    pods = [pod("learner", 0, "20"), pod("collector", 0, "21"), pod("collector", 1, "22")]
    first = replica_states(JOB, MEMBERSHIP, workflow("200"), pods)
    same = replica_states(JOB, MEMBERSHIP, workflow("201"), pods)  # Argo wrote, these nodes did not change
    assert all(a is b for a, b in zip(first, same, strict=True))
    failed = replica_states(JOB, MEMBERSHIP, workflow("202", collector_0="Failed"), pods)
    assert failed[0] is first[0] and failed[2] is first[2]
    assert (first[1].failed, failed[1].failed) == (False, True)
    assert failed == fresh(workflow("202", collector_0="Failed"), pods)


def test_another_copy_of_the_same_pod_versions_keeps_the_states() -> None:
    pods = [pod("learner", 0, "30"), pod("collector", 0, "31"), pod("collector", 1, "32")]
    first = replica_states(JOB, MEMBERSHIP, workflow("300"), pods)
    again = replica_states(JOB, MEMBERSHIP, copy.deepcopy(workflow("300")), copy.deepcopy(pods))  # a live read
    assert all(a is b for a, b in zip(first, again, strict=True))


def test_a_replica_with_two_pods_is_worked_out_again_when_either_changes() -> None:
    old = pod("collector", 1, "40", "Failed", False)
    old["metadata"].update(name=f"{JOB}-collector-1-0", uid="uid-old")
    pods = [pod("learner", 0, "41"), pod("collector", 0, "42"), old, pod("collector", 1, "43", "Pending", False)]
    first = replica_states(JOB, MEMBERSHIP, workflow("400"), pods)
    pods[3] = pod("collector", 1, "44")
    second = replica_states(JOB, MEMBERSHIP, workflow("400"), pods)
    assert second[2] is not first[2] and second[2].pod_phase == "Running"
    assert second == fresh(workflow("400"), pods)
    gone = replica_states(JOB, MEMBERSHIP, workflow("400"), pods[:3])  # the newer pod gone: the failed one is left
    assert gone[2].pod_phase == "Failed" and gone == fresh(workflow("400"), pods[:3])


def test_the_memo_starts_over_when_full_and_keeps_a_jobs_live_replicas_only(monkeypatch: Any) -> None:
    monkeypatch.setattr(replicas, "_JOBS_KEPT", 2)
    pods = [pod("learner", 0, "50"), pod("collector", 0, "51"), pod("collector", 1, "52")]
    states = replica_states(JOB, MEMBERSHIP, workflow("500"), pods)
    assert states == fresh(workflow("500"), pods)
    assert len(replicas._STATES[JOB]) == len(states)  # one entry per live replica of the job
    for other in ("b", "c"):
        replica_states(other, MEMBERSHIP, workflow("500"), [])
    assert len(replicas._STATES) <= 2 and "c" in replicas._STATES


def test_the_version_memo_keeps_one_entry_per_object_its_newest_version() -> None:
    """A pod whose status changes a hundred times holds one entry (the soak's controller kept every version of
    every pod, up to 20,000, docs/reliability.md); an older version is worked out again, correctly."""
    calls: list[str] = []

    def work(obj: dict[str, Any]) -> str:
        calls.append(obj["metadata"]["resourceVersion"])
        return f"phase at {obj['metadata']['resourceVersion']}"

    memo: VersionMemo[str] = VersionMemo(work, kept=10)
    for version in range(100):
        assert memo({"metadata": {"uid": "u1", "resourceVersion": str(version)}}) == f"phase at {version}"
    assert len(memo) == 1 and len(calls) == 100
    assert memo({"metadata": {"uid": "u1", "resourceVersion": "99"}}) == "phase at 99" and len(calls) == 100
    assert memo({"metadata": {"uid": "u1", "resourceVersion": "5"}}) == "phase at 5" and len(calls) == 101
    for uid in range(20):  # objects beyond `kept`: it starts over
        memo({"metadata": {"uid": f"p{uid}", "resourceVersion": "1"}})
    assert 1 <= len(memo) <= 10
