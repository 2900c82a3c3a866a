"""The reconciler's wiring of hand-edited replicas to the scaler, with in-memory stores (no cluster)."""

from __future__ import annotations

import copy
from typing import Any, cast

import pytest

from dihera.controller.metrics import Metrics
from dihera.errors import NotDiheraWorkflow, RetiredReplica, ScaleConflict, ScaleError
from dihera.kube.jobs import StatusConflict
from dihera.membership import Membership
from dihera.scaling import ScaleRequest
from tests.builders import job, retry_node, task
from tests.unit.controller_doubles import GROWN, LIVE, NAME, NS, T1, Cluster, dijob, pod, workflow
from tests.unit.controller_doubles import reconciler as make_reconciler


def reconcile(cluster: Cluster) -> None:
    store = cast(Any, cluster)
    make_reconciler(store, Metrics(), clock=lambda: T1).reconcile(NS, NAME)


def test_a_hand_edit_goes_through_the_scaler_and_the_status_follows() -> None:
    cluster = Cluster(dijob(collectors=3, generation=2, observed=1), LIVE, converged=1)
    reconcile(cluster)
    assert cluster.scale_calls == [(NS, NAME, ScaleRequest.sync(), False)]
    (status,) = cluster.statuses
    assert (status["phase"], status["replicas"], status["reschedules"]) == ("Rescheduling", 4, 1)
    assert (status["observedGeneration"], status["membershipGeneration"]) == (2, 2)
    assert [r for r, _ in cluster.events] == ["ReplicasChanged", "JobRescheduling"]


@pytest.mark.parametrize(
    ("case", "collectors", "generation", "observed", "stamp", "membership"),
    [
        ("spec and stamp written by a server request", 3, 2, 1, 2, GROWN),
        ("spec matches the membership", 2, 2, 1, None, LIVE),
        ("an edit seen before (refused)", 5, 2, 2, None, LIVE),
    ],
)
def test_no_scale_without_a_new_edit(
    case: str, collectors: int, generation: int, observed: int, stamp: int | None, membership: Membership
) -> None:
    cluster = Cluster(dijob(collectors, generation, observed, stamp), membership, membership.generation)
    reconcile(cluster)
    assert cluster.scale_calls == [], case


@pytest.mark.parametrize(
    ("case", "collectors", "converged"),
    [
        ("a server request between its commit and its spec write", 2, 2),
        ("A's spec (stamp 1) written after B's commit (generation 2)", 5, 2),
        ("a scaler crashed between its commit and its Workflow patch", 2, 1),
    ],
)
def test_a_spec_older_than_the_membership_is_caught_up_never_applied(
    case: str, collectors: int, converged: int
) -> None:
    cluster = Cluster(dijob(collectors, generation=2, observed=1, stamp=1), GROWN, converged)
    reconcile(cluster)
    assert cluster.scale_calls == [(NS, NAME, ScaleRequest.sync(), False)], case
    (status,) = cluster.statuses
    assert (status["replicas"], status["membershipGeneration"]) == (4, 2), case


def test_a_refused_edit_is_a_warning_event_and_is_not_retried() -> None:
    cluster = Cluster(dijob(collectors=9, generation=2, observed=1), LIVE, converged=1)
    cluster.scale_error = ScaleError("spec.tasks: the job would have 10 replicas in all", "out-of-bounds")
    reconcile(cluster)
    (status,) = cluster.statuses
    assert status["observedGeneration"] == 2 and status["membershipGeneration"] == 1
    ((reason, message),) = cluster.events
    assert reason == "ScaleRefused" and "collector 2 -> 9, refused: spec.tasks: the job would have 10" in message


def test_a_lost_resource_version_race_is_retried() -> None:
    cluster = Cluster(dijob(collectors=3, generation=2, observed=1), LIVE, converged=1)
    cluster.scale_error = ScaleConflict("gave up after 10 resourceVersion conflicts; try again")
    with pytest.raises(ScaleError):
        reconcile(cluster)
    assert cluster.statuses == []


def test_a_status_write_that_lost_a_race_is_recomputed_from_a_fresh_read() -> None:
    cluster = Cluster(dijob(collectors=2, generation=2, observed=1), LIVE, converged=1)
    cluster.conflicts = 2
    reconcile(cluster)
    assert len(cluster.statuses) == 1 and cluster.conflicts == 0


def test_status_conflicts_without_end_go_back_to_the_queue() -> None:
    cluster = Cluster(dijob(collectors=2, generation=2, observed=1), LIVE, converged=1)
    cluster.conflicts = 100
    with pytest.raises(StatusConflict):
        reconcile(cluster)
    assert cluster.statuses == [] and cluster.conflicts == 95


@pytest.mark.parametrize(
    "error",
    [
        RetiredReplica("replica(s) collector-1 were retired from the Workflow and cannot return"),
        NotDiheraWorkflow("Workflow j: no DAG template 'dijob'; not a dihera Workflow"),
    ],
)
def test_a_permanent_refusal_is_one_event_and_never_raised_for_a_retry(error: ScaleError) -> None:
    # a spec older than the membership is caught up on every pass: the refusal comes back each time
    cluster = Cluster(dijob(collectors=2, generation=2, observed=2, stamp=1), GROWN, converged=1)
    cluster.scale_error = error
    store = cast(Any, cluster)
    reconciler = make_reconciler(store, Metrics(), clock=lambda: T1)
    for _ in range(3):
        reconciler.reconcile(NS, NAME)
    assert len(cluster.scale_calls) == 3
    refusals = [m for r, m in cluster.events if r == "ScaleRefused"]
    assert len(refusals) == 1 and str(error) in refusals[0]


class NewJobCluster(Cluster):
    """A DIJob just created: no status, no objects; records the order of writes."""

    def __init__(self) -> None:
        body = job(task("learner", replicas=1), task("collector", replicas=2), name=NAME)
        body["metadata"].update(namespace=NS, uid="job-uid", generation=1, resourceVersion="1")
        super().__init__(body, LIVE, converged=1)
        self.configmap, self.workflow = None, None  # type: ignore[assignment]
        self.writes: list[str] = []

    def patch_status(self, namespace: str, name: str, ops: list[dict[str, Any]]) -> dict[str, Any]:
        written = super().patch_status(namespace, name, ops)
        self.writes.append(f"status {self.body['status']['phase']}")
        return written

    def create(self, obj: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        self.writes.append(f"create {obj['kind']}")
        if obj["kind"] == "Workflow":
            self.workflow = {**workflow(1, LIVE), "status": {"phase": "Running", "nodes": {}}}
            return copy.deepcopy(self.workflow), True
        return copy.deepcopy(obj), True

    def get_configmap(self, namespace: str, name: str) -> Any:
        return None

    def get_workflow(self, namespace: str, name: str) -> Any:
        return None


def test_a_new_job_records_pending_before_its_objects_exist() -> None:
    cluster = NewJobCluster()
    reconcile(cluster)
    assert cluster.writes[:2] == ["status Pending", "create ConfigMap"]
    assert cluster.writes[2:4] == ["create Service", "create Workflow"]
    first, last = cluster.statuses[0], cluster.statuses[-1]
    assert [c["type"] for c in first["conditions"]] == ["Pending"]
    assert first["observedGeneration"] == 1 and "workflowName" not in first
    assert last["conditions"][0]["type"] == "Pending" and last["phase"] == "Running"
    assert [r for r, _ in cluster.events][:1] == ["JobPending"]


def test_a_job_with_a_status_is_not_set_back_to_pending() -> None:
    cluster = NewJobCluster()
    cluster.body["status"] = {"phase": "Pending", "conditions": [], "observedGeneration": 1}
    reconcile(cluster)
    assert "status Pending" not in cluster.writes[:1]
    assert cluster.writes[0] == "create ConfigMap"


SHRUNK = Membership(2, LIVE.replicas[:2])  # collector-1 retired


def retired_collector_1(tombstone: str) -> Cluster:
    """A job scaled 2 -> 1 collectors, spec and stamp current: collector-1's pod is still alive, and Argo's
    node of its tombstone (the DAG task ``collector-1``) is ``tombstone``."""
    cluster = Cluster(dijob(collectors=1, generation=2, observed=2, stamp=2), SHRUNK, converged=2)
    cluster.body["status"]["membershipGeneration"] = 2
    tasks = cluster.workflow["spec"]["templates"][0]["dag"]["tasks"]
    tasks.append({"name": "collector-1", "template": "dihera-retired"})
    cluster.workflow["status"]["nodes"] = {"r": retry_node(f"{NAME}.collector-1", tombstone)}
    return cluster


@pytest.mark.parametrize(("tombstone", "deleted"), [("Succeeded", ["j-collector-1"]), ("Running", [])])
def test_a_retired_replicas_pod_left_by_the_scaler_is_deleted_once_argo_finished_its_tombstone(
    tombstone: str, deleted: list[str]
) -> None:
    # the scaler waits for Argo a bounded time; a pod it left is the controller's, never deleted too early
    cluster = retired_collector_1(tombstone)
    reconcile(cluster)
    assert cluster.scale_calls == [] and cluster.deleted == deleted


def test_the_pass_that_ran_the_scaler_leaves_the_retired_pods_to_it() -> None:
    # the pods come from the watch cache, which may not show the scaler's deletions yet: no second delete
    cluster = retired_collector_1("Succeeded")
    cluster.body["metadata"]["annotations"]["diengine/membership-generation"] = "1"  # a commit to catch up
    cluster.scale_result = (SHRUNK, copy.deepcopy(cluster.workflow))
    reconcile(cluster)
    assert len(cluster.scale_calls) == 1 and cluster.deleted == []


def test_progress_is_written_at_most_once_per_batch_and_a_phase_change_at_once() -> None:
    cluster = Cluster(dijob(collectors=3, generation=2, observed=2, stamp=2), GROWN, converged=2)
    cluster.body["status"]["membershipGeneration"] = 2
    now = [0.0]
    store = cast(Any, cluster)
    reconciler = make_reconciler(
        store,
        Metrics(),
        clock=lambda: T1,
        progress_batch=1.0,
        monotonic=lambda: now[0],
    )

    def pass_at(t: float, replicas: int) -> float | None:
        now[0] = t
        cluster.live_pods = [pod(r) for r in GROWN.replicas[:replicas]]
        return reconciler.reconcile(NS, NAME)

    assert pass_at(0.0, 2) is None  # Running -> Pending (2/4 pods): a phase change, written
    assert [s["phase"] for s in cluster.statuses] == ["Pending"]
    wait = pass_at(0.3, 3)  # 3/4: progress only, 0.3 s after the last write
    assert len(cluster.statuses) == 1 and wait == pytest.approx(0.7)
    assert pass_at(1.1, 3) is None  # the pass then due writes it
    assert len(cluster.statuses) == 2 and cluster.statuses[-1]["readyReplicas"] == 3
    assert pass_at(1.2, 4) is None  # all 4 Running: a phase change, written at once
    assert [s["phase"] for s in cluster.statuses] == ["Pending", "Pending", "Running"]
    assert cluster.statuses[-1]["readyReplicas"] == 4


def test_without_a_progress_batch_every_change_is_written() -> None:
    cluster = Cluster(dijob(collectors=3, generation=2, observed=2, stamp=2), GROWN, converged=2)
    cluster.body["status"]["membershipGeneration"] = 2
    for replicas in (2, 3):
        cluster.live_pods = [pod(r) for r in GROWN.replicas[:replicas]]
        reconcile(cluster)
    assert [s["readyReplicas"] for s in cluster.statuses] == [2, 3]
