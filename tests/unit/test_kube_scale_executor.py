"""JobScaler's per-job locks serialise requests and leave the table when idle (bounded by jobs in use); a
scale-down deletes a retired replica's pod only once Argo's writes show its tombstone finished (the use case,
dihera.scaling.executor and dihera.scaling.retire, with its stores faked; its order of writes on a job in memory:
test_scaling_executor.py)."""

from __future__ import annotations

import threading
import time
from collections.abc import Generator, Mapping, Sequence
from dataclasses import replace
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from dihera.errors import ScaleConflict, ScaleNotFound
from dihera.kube.scale_executor import JobScaler, ScaleStore
from dihera.membership import Membership
from dihera.patches import precondition
from dihera.render.env import MEMBERSHIP_FILE
from dihera.scaling import GENERATION_ANNOTATION, ScaleRequest, executor
from dihera.scaling.executor import ScaleExecutor
from dihera.scaling.ports import WriteConflict
from dihera.scaling.retire import delete_retired_pods
from tests.builders import PodBuilder, WorkflowBuilder, retry_node
from tests.unit.scaled_job import BASE, base_job, base_state
from tests.unit.scaling_cluster import MemoryCluster


def test_idle_jobs_leave_no_lock_behind() -> None:
    scaler = JobScaler(client.ApiClient())  # no request is sent: only the lock table is used
    for i in range(1000):
        with scaler._locked(f"ns/job-{i}"):
            assert scaler.locked_jobs == 1
    assert scaler.locked_jobs == 0


def test_one_job_is_serialised_and_its_lock_goes_with_the_last_user() -> None:
    scaler = JobScaler(client.ApiClient())
    inside: list[str] = []
    overlap = threading.Event()
    first_in = threading.Event()

    def use(name: str) -> None:
        with scaler._locked("ns/job"):
            if inside:
                overlap.set()
            inside.append(name)
            first_in.set()
            time.sleep(0.05)
            inside.remove(name)

    threads = [threading.Thread(target=use, args=(f"t{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    first_in.wait(5)
    assert scaler.locked_jobs == 1
    for t in threads:
        t.join(5)
    assert not overlap.is_set() and scaler.locked_jobs == 0


def test_lost_races_are_retried_after_growing_jittered_pauses_then_refused() -> None:
    pauses: list[float] = []
    cluster = MemoryCluster(BASE)  # no store is used: only the retries
    scaler = ScaleExecutor(
        jobs=cluster, memberships=cluster, workflows=cluster, retirement=cluster, attempts=6, sleep=pauses.append
    )
    losses = iter(range(3))

    def step() -> str:  # loses three races, then wins
        if next(losses, None) is not None:
            raise WriteConflict()
        return "written"

    assert scaler._retry(step) == "written"
    assert len(pauses) == 3
    assert all(0 <= p <= executor.CONFLICT_PAUSE * 2**i for i, p in enumerate(pauses)), pauses

    pauses.clear()

    def always() -> str:
        raise WriteConflict()

    with pytest.raises(ScaleConflict, match="gave up after 6 resourceVersion conflicts"):
        scaler._retry(always)
    assert len(pauses) == 5  # no pause after the last attempt
    assert max(pauses) <= executor.CONFLICT_PAUSE_CAP


class _Objects:
    """The RetirementStore of a scale-down's pod deletion: Argo's writes arrive as ``updates``."""

    def __init__(self, pods: list[dict[str, Any]], updates: list[dict[str, Any]]) -> None:
        self.pods, self.updates = pods, updates
        self.deleted: list[list[str]] = []
        self.uids: dict[str, str] = {}
        self.watched_from: list[str] = []

    def list_pods(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        return self.pods

    def watch_workflow(
        self, namespace: str, name: str, after: str, seconds: float
    ) -> Generator[dict[str, Any], None, None]:
        self.watched_from.append(after)
        yield from self.updates

    def delete_pods(self, namespace: str, names: Sequence[str], uids: Mapping[str, str] | None = None) -> None:
        self.deleted.append(list(names))
        self.uids.update(uids or {})


def _retiring(tombstones: dict[str, str], version: str) -> dict[str, Any]:
    """Job ``j`` with collector-1 and collector-2 retired; ``tombstones``: DAG task -> its node's phase."""
    wf = WorkflowBuilder("j").uid("wf-uid").version(version).dag([("collector", i) for i in range(3)], retired=RETIRED)
    return wf.nodes({n: retry_node(f"j.{n}", p) for n, p in tombstones.items()}).obj()


RETIRED = ("collector-1", "collector-2")
PODS = [
    PodBuilder(f"pod-{h}").uid(f"uid-{h}").host(f"j-{h}").owner("wf-uid").phase("Running").obj()
    for h in ("collector-0", *RETIRED)
]


def test_retired_pods_are_deleted_as_argo_finishes_their_tombstones() -> None:
    objects = _Objects(
        PODS,
        [
            _retiring({"collector-1": "Running", "collector-2": "Running"}, "11"),  # a write of Argo's before ours
            _retiring({"collector-1": "Succeeded", "collector-2": "Running"}, "12"),
            _retiring({"collector-1": "Succeeded", "collector-2": "Succeeded"}, "13"),
        ],
    )
    deleted = delete_retired_pods(objects, "ns", "j", _retiring({}, "10"))
    assert objects.watched_from == ["10"]  # from the version our patch wrote
    assert objects.deleted == [["pod-collector-1"], ["pod-collector-2"]]
    assert deleted == ["pod-collector-1", "pod-collector-2"]


def test_a_pod_argo_has_not_finished_in_time_is_left_to_the_controller() -> None:
    objects = _Objects(PODS, [_retiring({"collector-1": "Succeeded"}, "11")])  # then the watch times out
    assert delete_retired_pods(objects, "ns", "j", _retiring({}, "10"), wait=5) == ["pod-collector-1"]
    assert objects.deleted == [["pod-collector-1"]]


def test_no_watch_when_argo_already_finished_every_tombstone() -> None:
    objects = _Objects(PODS, [])
    done = _retiring({"collector-1": "Succeeded", "collector-2": "Failed"}, "10")
    assert delete_retired_pods(objects, "ns", "j", done) == ["pod-collector-1", "pod-collector-2"]
    assert objects.watched_from == [] and objects.deleted == [["pod-collector-1", "pod-collector-2"]]


def test_a_pod_labelled_like_a_retired_replica_but_not_the_workflows_survives_and_each_delete_names_its_uid() -> None:
    """Anyone may label a pod ``diengine/job: j`` and ``diengine/pod: j-collector-1``: only the pods the job's
    Workflow owns are deleted, each under a uid precondition (a pod created again under the name is kept)."""
    planted = PodBuilder("planted").uid("uid-planted").host("j-collector-1").phase("Running").obj()
    other = PodBuilder("other").uid("uid-other").host("j-collector-2").owner("another-wf").phase("Running").obj()
    objects = _Objects([*PODS, planted, other], [])
    done = _retiring({"collector-1": "Succeeded", "collector-2": "Succeeded"}, "10")
    assert delete_retired_pods(objects, "ns", "j", done) == ["pod-collector-1", "pod-collector-2"]
    assert objects.uids == {"pod-collector-1": "uid-collector-1", "pod-collector-2": "uid-collector-2"}


class _JobStore:
    """The DIJob as each read finds it: one body a read, the last one again once they run out; the patches
    ``sent``."""

    def __init__(self, *bodies: dict[str, Any]) -> None:
        self.bodies = list(bodies)
        self.sent: list[list[dict[str, Any]]] = []

    def get_job(self, namespace: str, name: str) -> dict[str, Any]:
        return self.bodies.pop(0) if len(self.bodies) > 1 else self.bodies[0]

    def patch_job(self, namespace: str, name: str, ops: Sequence[Mapping[str, Any]]) -> None:
        self.sent.append([dict(op) for op in ops])


class _Membership:
    """The running job's ConfigMap and Workflow (what ``ScaleExecutor._read`` and ``_write_spec`` read)."""

    def __init__(self, membership: Membership, workflow: dict[str, Any]) -> None:
        self.configmap = {
            "metadata": {"name": "di-j", "resourceVersion": "1"},
            "data": {MEMBERSHIP_FILE: membership.to_json()},
        }
        self.workflow = workflow

    def get_configmap(self, namespace: str, name: str) -> dict[str, Any]:
        return self.configmap

    def get_workflow(self, namespace: str, name: str) -> dict[str, Any]:
        return self.workflow

    def replace_configmap(self, namespace: str, configmap: Mapping[str, Any]) -> None:
        raise AssertionError("a sync of an older spec commits nothing")

    def patch_workflow(self, namespace: str, name: str, ops: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        raise AssertionError("the Workflow is not converged in these tests")


def _stamped(stamp: int, collectors: int, version: str) -> dict[str, Any]:
    body = base_job().with_replicas("collector", collectors).to_manifest()
    body["metadata"].update(resourceVersion=version, annotations={GENERATION_ANNOTATION: str(stamp)})
    return body


@pytest.mark.parametrize(
    ("case", "later", "written"),
    [
        ("the spec is still older when written: caught up", _stamped(4, 3, "11"), True),
        ("a scaler wrote generation 5, then a hand edit (1 collector): kept", _stamped(5, 1, "12"), False),
    ],
)
def test_a_catch_up_decided_on_an_older_read_never_undoes_a_later_hand_edit(
    case: str, later: dict[str, Any], written: bool
) -> None:
    """The controller's sync reads stamp 4 < membership 5 (catch up); by the time it writes the spec, a scaler
    may have written generation 5 and the user edited the replicas: that edit is applied later, not undone."""
    _, membership, workflow = base_state()
    patches = _JobStore(_stamped(4, 3, "10"), later)
    stores = _Membership(replace(membership, generation=5), workflow)
    scaler = ScaleExecutor(jobs=patches, memberships=stores, workflows=stores, retirement=_Objects([], []))
    scaler._converge_workflow = lambda namespace, name: []  # type: ignore[method-assign]
    result = scaler.scale("ns", "j", ScaleRequest.sync(), update_spec=False)
    assert not result.changed, case
    if written:  # counts (2 collectors) and stamp 5, guarded by the version read
        assert patches.sent and patches.sent[0][0] == precondition(later)
        assert {"op": "replace", "path": "/spec/tasks/1/replicas", "value": 2} in patches.sent[0], patches.sent
    else:
        assert patches.sent == [], case


class _RefusingCustom:
    """CustomObjectsApi whose patches all fail with ``status``."""

    def __init__(self, status: int) -> None:
        self.status = status

    def patch_namespaced_custom_object(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        raise ApiException(status=self.status, reason="refused")


@pytest.mark.parametrize(
    ("status", "raised"), [(409, WriteConflict), (404, ScaleNotFound), (500, ApiException)], ids=str
)
def test_the_store_tells_a_lost_race_and_a_gone_object_in_the_use_cases_terms(
    status: int, raised: type[Exception]
) -> None:
    """409: the use case reads again (WriteConflict); 404: ScaleNotFound; anything else as the API said it."""
    store = ScaleStore(client.ApiClient())
    store._custom = _RefusingCustom(status)  # type: ignore[assignment]
    with pytest.raises(raised):
        store.patch_workflow("ns", "j", [{"op": "test", "path": "/metadata/name", "value": "j"}])
    with pytest.raises(raised):
        store.patch_job("ns", "j", [{"op": "test", "path": "/metadata/name", "value": "j"}])
