"""A failure message names a few replicas and counts the rest (a 2,000-replica job's status stays short)."""

from __future__ import annotations

from dihera.controller.decide.failures import FAILURES_NAMED, describe_failure, describe_failures
from dihera.controller.decide.replicas import ReplicaState, failure_reason, replica_states
from dihera.membership import Membership, Replica
from tests.builders import PodBuilder, WorkflowBuilder, pod_node

#: The kubelet's message for a pod whose emptyDir outgrew its sizeLimit (seen on the real node).
EMPTYDIR = 'Usage of EmptyDir volume "workdir" exceeds the limit "256Mi". '


def failed(index: int) -> ReplicaState:
    return ReplicaState("collector", index, index + 1, f"j-collector-{index}", 0, failed=True, exit_code=3)


def test_a_few_failures_are_all_named() -> None:
    message = describe_failures([failed(0), failed(1)])
    assert message == (
        "replica collector-0 (rank 1) failed with exit code 3; replica collector-1 (rank 2) failed with exit code 3"
    )


def test_many_failures_name_the_first_and_count_the_rest() -> None:
    message = describe_failures([failed(i) for i in range(2000)])
    assert message.count("failed with exit code 3") == FAILURES_NAMED
    assert "replica collector-4 (rank 5)" in message and "collector-5 " not in message
    assert message.endswith("; and 1,995 more") and len(message) < 400


def evicted_pod(name: str, attempt: int) -> dict:
    built = PodBuilder(name).replica("j", "learner", 0, attempt=attempt).created(f"2026-01-01T00:0{attempt}:00Z")
    return built.phase("Failed").reason("Evicted", EMPTYDIR).terminated("main", 143).obj()


def test_an_evicted_replica_is_described_with_the_kubelets_reason() -> None:
    """The kubelet removes an evicted pod's containers (its log is gone): the reason is all that is left."""
    membership = Membership(1, (Replica(0, "learner", 0),))
    wf = WorkflowBuilder("j").uid("wf").version("1").dag(membership).nodes({})
    wf.node("learner-0", pod_node("j.learner-0(0)", "Failed", progress="0/1"))
    wf.node("learner-0-1", pod_node("j.learner-0(1)", "Running", progress="0/1"))
    running = PodBuilder("j-learner-0-b").replica("j", "learner", 0, attempt=1).created("2026-01-01T00:01:00Z")
    pods = [evicted_pod("j-learner-0-a", 0), running.phase("Running").ready().obj()]
    (state,) = replica_states("j", membership, wf.obj(), pods)
    assert state.attempt == 1 and not state.failed and state.last_failure_code == 143, state
    assert describe_failure(state) == (
        "replica learner-0 (rank 0, pod j-learner-0-b) failed with exit code 143 "
        '(Evicted: Usage of EmptyDir volume "workdir" exceeds the limit "256Mi".)'
    )


def test_a_failure_reason_is_read_only_from_a_failed_pod_and_kept_short() -> None:
    assert failure_reason(PodBuilder("p").phase("Running").reason("Evicted", "x").obj()) is None
    assert failure_reason(PodBuilder("p").phase("Failed").terminated("main", 1).obj()) is None
    assert failure_reason(PodBuilder("p").phase("Failed").reason("DeadlineExceeded").obj()) == "DeadlineExceeded"
    long = failure_reason(PodBuilder("p").phase("Failed").reason("Evicted", "m " * 300).obj())
    assert long is not None and len(long) == 200 and long.endswith("...") and "  " not in long
