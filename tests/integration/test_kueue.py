"""Queueing DIJobs with Kueue on the local control plane: the real Kueue manager (v0.19.2, kueue-up), the
controller as a subprocess with ``--kueue`` and the chart's RBAC for ``kueue.enabled``, kwok nodes.

The issue's "Done when" (docs/queueing.md): with a ClusterQueue quota of 6 pods' worth of CPU a 4-replica
job runs, a second waits with zero pods until the first finishes, a 10-replica job never starts and says
why, an unlabelled job runs beside them; a high-priority job preempts a preemptible low one (stopped,
requeued, resumed with the same ranks) and cannot preempt a ``preemptible: false`` one; a scale-up beyond
the quota is refused with Kueue's reason, within it proceeds; a high-priority job is admitted by shrinking a
preemptible low one's collectors instead of evicting it, which grows back when the high one ends.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from dihera.kube.jobs import JobStore
from dihera.server import ServerSettings
from tests.integration.conftest import Poll
from tests.integration.controllers import denied
from tests.integration.jobs import job_pods
from tests.integration.kueue import (
    CLASSES,
    GROUP,
    KUEUE_VALUES,
    VERSION,
    KueueController,
    Queues,
    condition,
    kueue_rbac_applied,
    kueue_settings,
    qtask,
    queued,
)
from tests.integration.lifecycle import current_message, has_event, live_pods, status_where
from tests.integration.servers import install_server_rbac, running_server, sa_token
from tests.integration.volumes import claim

pytestmark = [pytest.mark.cluster, pytest.mark.exclusive]


@dataclass
class Setup:
    queues: Queues
    controller: KueueController


@pytest.fixture
def kueue_rbac(kubeconfig: Path, controller_kubeconfig: Path) -> Iterator[Path]:
    """The chart's controller RBAC with ``kueue.enabled`` (tests/integration/kueue.py), as long as the test runs."""
    with kueue_rbac_applied(kubeconfig):
        yield controller_kubeconfig


@pytest.fixture
def setup(
    kueue_rbac: Path, dijob_crd: None, namespace: str, kueue_queues: Callable[..., Queues], tmp_path: Path
) -> Iterator[Callable[..., Setup]]:
    """``setup(cpu, preemption=...)``: queues with that CPU quota and the namespace's priority classes, and the
    controller (the chart's ServiceAccount, ``--kueue``) watching the namespace."""
    started: list[KueueController] = []

    def make(cpu: str, preemption: str = "LowerPriority") -> Setup:
        queues = kueue_queues(cpu=cpu, priority_classes=CLASSES, preemption=preemption)
        ctl = KueueController(kueue_rbac, namespace, tmp_path / "controller.log")
        ctl.start()
        started.append(ctl)
        return Setup(queues, ctl)

    try:
        yield make
    finally:
        for ctl in started:
            ctl.kill(signal.SIGTERM)
            print(ctl.logs()[-8000:])  # shown by pytest when the test failed
            errors = denied(ctl.logs())
            assert not errors, f"the controller lacked a permission:\n{errors[0]}"


def get_workload(api: client.ApiClient, namespace: str, name: str) -> dict[str, Any] | None:
    try:
        found: dict[str, Any] = client.CustomObjectsApi(api).get_namespaced_custom_object(
            GROUP, VERSION, namespace, "workloads", name
        )
    except ApiException as err:
        if err.status == 404:
            return None
        raise
    return found


def is_true(obj: dict[str, Any] | None, kind: str) -> bool:
    cond = condition(obj or {}, kind)
    return cond is not None and cond["status"] == "True"


def phase(jobs: JobStore, namespace: str, name: str, want: str, *words: str) -> Callable[[], dict[str, Any] | None]:
    """A poll condition: the DIJob in phase ``want`` with every one of ``words`` in its current message."""
    return status_where(
        jobs, namespace, name, lambda s: s.get("phase") == want and all(w in current_message(s) for w in words)
    )


def ranks(api: client.ApiClient, namespace: str, name: str) -> dict[str, tuple[str, str]]:
    """Hostname → (rank, FQDN subdomain) of the job's live pods."""
    return {
        p["spec"]["hostname"]: (p["metadata"]["annotations"]["diengine/rank"], p["spec"]["subdomain"])
        for p in live_pods(api, namespace, name)
    }


def test_whole_jobs_within_the_quota_the_rest_wait_with_zero_pods_and_unlabelled_jobs_are_unaffected(
    setup: Callable[..., Setup], cluster: client.ApiClient, namespace: str, poll: Poll
) -> None:
    lq = setup(cpu="6").queues.local_queue
    jobs = JobStore(cluster)
    jobs.create(queued("first", namespace, lq, qtask("learner", 1, "25"), qtask("collector", 3, "25")))
    poll(phase(jobs, namespace, "first", "Running"), 120, "first Running (admitted: 4 of 6 CPUs)")
    assert is_true(get_workload(cluster, namespace, "dijob-first"), "Admitted")

    jobs.create(queued("second", namespace, lq, qtask("learner", 1, "2"), qtask("collector", 3, "2")))
    waiting = poll(phase(jobs, namespace, "second", "Queued", "insufficient"), 60, "second Queued with Kueue's reason")
    print("second:", current_message(waiting))
    assert "waiting for Kueue to admit Workload dijob-second in LocalQueue" in current_message(waiting)
    assert job_pods(cluster, namespace, "second") == []

    jobs.create(queued("big", namespace, lq, qtask("learner", 1), qtask("collector", 9)))
    big = poll(phase(jobs, namespace, "big", "Queued", "cpu"), 60, "big Queued with Kueue's reason")
    print("big:", current_message(big))

    # a job without the label runs beside them although the queue's quota is taken: Kueue is not involved
    jobs.create(queued("free", namespace, None, qtask("learner", 1, "2"), qtask("collector", 3, "2")))
    poll(phase(jobs, namespace, "free", "Succeeded"), 120, "the unlabelled job Succeeded")
    assert get_workload(cluster, namespace, "dijob-free") is None

    assert job_pods(cluster, namespace, "second") == []  # still: first holds the quota
    first = poll(phase(jobs, namespace, "first", "Succeeded"), 180, "first Succeeded")
    finished = poll(lambda: is_true(get_workload(cluster, namespace, "dijob-first"), "Finished"), 30, "Finished")
    assert finished
    poll(phase(jobs, namespace, "second", "Succeeded"), 180, "second admitted once first finished, then Succeeded")
    created = sorted(p["metadata"]["creationTimestamp"] for p in job_pods(cluster, namespace, "second"))
    assert created and created[0] >= first["completionTimestamp"], (created, first["completionTimestamp"])

    # the 10-replica job never fits a 6-CPU queue: still Queued, no pod, saying why
    big = jobs.get(namespace, "big") or {}
    assert big["status"]["phase"] == "Queued" and job_pods(cluster, namespace, "big") == []
    assert "cpu" in current_message(big["status"]), current_message(big["status"])


def test_a_high_priority_job_preempts_a_preemptible_low_one_which_resumes_with_the_same_ranks(
    setup: Callable[..., Setup], cluster: client.ApiClient, namespace: str, storage_class: str, poll: Poll
) -> None:
    """...and the low job's checkpoint claim (spec.checkpoint) outlives its eviction: the same claim is mounted
    when it runs again."""
    lq = setup(cpu="4").queues.local_queue
    jobs = JobStore(cluster)
    checkpoint = {"storageClassName": storage_class}
    low = queued("low", namespace, lq, qtask("learner", 1), qtask("collector", 3), priority="low", preemptible=True)
    jobs.create({**low, "spec": {**low["spec"], "checkpoint": checkpoint}})
    poll(phase(jobs, namespace, "low", "Running"), 120, "low Running")
    kept = claim(cluster, namespace, "low")
    assert kept is not None
    before = poll(lambda: (r := ranks(cluster, namespace, "low")) and len(r) == 4 and r, 30, "low's 4 pods")
    uids = {p["metadata"]["uid"] for p in live_pods(cluster, namespace, "low")}

    jobs.create(
        queued(
            "high",
            namespace,
            lq,
            qtask("learner", 1, "5"),
            qtask("collector", 3, "5"),
            priority="high",
            preemptible=True,
        )
    )
    evicted = poll(phase(jobs, namespace, "low", "Queued", "evicted by Kueue (Preempted"), 60, "low evicted")
    print("low:", current_message(evicted))
    poll(lambda: live_pods(cluster, namespace, "low") == [], 60, "low's replicas stopped")
    poll(phase(jobs, namespace, "high", "Succeeded"), 120, "high ran and Succeeded")
    assert has_event(cluster, namespace, "low", "Evicted", "Preempted")()
    assert condition(get_workload(cluster, namespace, "dijob-low") or {}, "Requeued") is not None

    poll(phase(jobs, namespace, "low", "Running"), 120, "low admitted again and Running")
    after = poll(lambda: (r := ranks(cluster, namespace, "low")) and len(r) == 4 and r, 30, "low's 4 pods again")
    assert after == before  # same hostnames, ranks and subdomain (FQDNs)
    assert not uids & {p["metadata"]["uid"] for p in live_pods(cluster, namespace, "low")}  # a new run
    again = claim(cluster, namespace, "low")
    assert again is not None and again["metadata"]["uid"] == kept["metadata"]["uid"]  # the same claim
    learner = [
        p for p in live_pods(cluster, namespace, "low") if p["metadata"]["labels"]["diengine/task-name"] == "learner"
    ]
    volumes = [v.get("persistentVolumeClaim", {}).get("claimName") for p in learner for v in p["spec"]["volumes"]]
    assert "di-low-checkpoints" in volumes, volumes
    status = jobs.get(namespace, "low")["status"]  # type: ignore[index]
    assert status["restarts"] == 0 and status["membershipGeneration"] == 1


def test_a_preemptible_false_job_is_not_preempted(
    setup: Callable[..., Setup], cluster: client.ApiClient, namespace: str, poll: Poll
) -> None:
    lq = setup(cpu="4").queues.local_queue
    jobs = JobStore(cluster)
    jobs.create(queued("keep", namespace, lq, qtask("learner", 1), qtask("collector", 3), priority="low"))
    poll(phase(jobs, namespace, "keep", "Running"), 120, "keep Running (preemptible: false, the default)")
    uids = {p["metadata"]["uid"] for p in live_pods(cluster, namespace, "keep")}
    wl = get_workload(cluster, namespace, "dijob-keep") or {}
    assert wl["spec"]["priorityClassRef"]["name"] == f"{namespace}-nonpreemptible" and wl["spec"]["priority"] == 1000

    jobs.create(
        queued("urgent", namespace, lq, qtask("learner", 1), qtask("collector", 3), priority="high", preemptible=True)
    )
    urgent = poll(phase(jobs, namespace, "urgent", "Queued", "insufficient"), 60, "urgent Queued: nothing to preempt")
    print("urgent:", current_message(urgent))
    # Kueue has evaluated urgent (QuotaReserved False with its reason) and chose no victim
    keep = get_workload(cluster, namespace, "dijob-keep")
    assert not is_true(keep, "Evicted") and is_true(keep, "Admitted")
    assert (jobs.get(namespace, "keep") or {})["status"]["phase"] == "Running"
    assert {p["metadata"]["uid"] for p in live_pods(cluster, namespace, "keep")} == uids
    assert job_pods(cluster, namespace, "urgent") == []


@pytest.fixture
def kueue_server(kubeconfig: Path, cluster: client.ApiClient, namespace: str, tmp_path: Path) -> Iterator[str]:
    """A di-server with ``--kueue`` as the chart's ServiceAccount with ``kueue.enabled`` RBAC (put back after)."""
    path, _ = install_server_rbac(kubeconfig, cluster, tmp_path, KUEUE_VALUES)
    settings = ServerSettings(namespaces=(namespace,), auth_cache_seconds=0.0, kueue=kueue_settings(namespace))
    try:
        with running_server(settings, path) as url:
            yield url
    finally:
        install_server_rbac(kubeconfig, cluster, tmp_path)


def test_a_scale_up_beyond_the_quota_is_refused_with_kueues_reason_within_it_proceeds(
    setup: Callable[..., Setup], kueue_server: str, cluster: client.ApiClient, namespace: str, poll: Poll
) -> None:
    lq = setup(cpu="6").queues.local_queue
    jobs = JobStore(cluster)
    jobs.create(queued("elastic", namespace, lq, qtask("learner", 1), qtask("collector", 3), maxReplicas=10))
    poll(phase(jobs, namespace, "elastic", "Running"), 120, "elastic Running (4 of 6 CPUs)")
    token = sa_token(cluster, namespace, "scaler", ["get", "patch"])
    http = httpx.Client(base_url=kueue_server, headers={"Authorization": f"Bearer {token}"}, timeout=60)
    url = f"/v1/namespaces/{namespace}/dijobs/elastic/tasks/collector/replicas"

    up = http.put(url, json={"replicas": 5})  # +2: 6 of 6 CPUs
    assert up.status_code == 200, up.text
    poll(lambda: len(live_pods(cluster, namespace, "elastic")) == 6, 60, "6 pods")
    assert get_workload(cluster, namespace, "dijob-elastic-g2") is not None  # the slice holding the 2 added

    refused = http.put(url, json={"replicas": 7})  # +2 more: 8 > 6
    print("refused:", refused.status_code, refused.text)
    assert refused.status_code == 409, refused.text
    detail = refused.text
    assert "collector 7" in detail and "refused" in detail and "insufficient" in detail, detail
    assert len(live_pods(cluster, namespace, "elastic")) == 6
    body = jobs.get(namespace, "elastic") or {}
    assert [t["replicas"] for t in body["spec"]["tasks"]] == [1, 5]
    assert get_workload(cluster, namespace, "dijob-elastic-g3") is None  # the refused slice is gone

    down = http.put(url, json={"replicas": 3})  # back to 4: the slice is no longer needed
    assert down.status_code == 200, down.text
    poll(lambda: get_workload(cluster, namespace, "dijob-elastic-g2") is None, 30, "the slice deleted")
    up = http.put(url, json={"replicas": 5})  # and the quota it held can be asked for again
    assert up.status_code == 200, up.text
    poll(lambda: len(live_pods(cluster, namespace, "elastic")) == 6, 60, "6 pods again")


#: The bound stated in docs/queueing.md ("Shrink before eviction") for a high-priority job to be admitted by
#: shrinking a low one on kwok nodes: from its creation to its Workload Admitted.
SHRINK_ADMIT_BOUND = 30.0


def learner_uid(api: client.ApiClient, namespace: str, name: str) -> str | None:
    pods = [p for p in live_pods(api, namespace, name) if p["metadata"]["labels"]["diengine/task-name"] == "learner"]
    return pods[0]["metadata"]["uid"] if len(pods) == 1 else None


def collectors(jobs: JobStore, namespace: str, name: str) -> int:
    body = jobs.get(namespace, name) or {}
    return int(next(t["replicas"] for t in body["spec"]["tasks"] if t["type"] == "collector"))


def test_a_high_priority_job_is_admitted_by_shrinking_a_preemptible_low_one_which_grows_back_after(
    setup: Callable[..., Setup], cluster: client.ApiClient, namespace: str, poll: Poll
) -> None:
    """The issue's kwok case: the low job holds the whole quota (a learner and 7 collectors: 6 above their
    minimum of 1); the high one needs 4 CPUs. The controller gives back 4 collectors before it creates the high
    job's Workload, so Kueue admits it from free quota: no eviction, the low learner keeps its pod, 0 restarts.
    When the high job ends, the low one takes its 7 collectors back."""
    lq = setup(cpu="8").queues.local_queue
    jobs = JobStore(cluster)
    low = queued("low", namespace, lq, qtask("learner", 1), qtask("collector", 7), priority="low", preemptible=True)
    jobs.create(low)
    poll(phase(jobs, namespace, "low", "Running"), 120, "low Running (8 of 8 CPUs)")
    poll(lambda: len(live_pods(cluster, namespace, "low")) == 8, 60, "low's 8 pods")
    learner = learner_uid(cluster, namespace, "low")
    assert learner is not None

    started = time.monotonic()
    high = queued(
        "high", namespace, lq, qtask("learner", 1, "20"), qtask("collector", 3, "20"), priority="high", preemptible=True
    )
    jobs.create(high)
    poll(lambda: is_true(get_workload(cluster, namespace, "dijob-high"), "Admitted"), 90, "high admitted")
    admitted_after = time.monotonic() - started
    print(f"high admitted {admitted_after:.1f}s after its creation (bound {SHRINK_ADMIT_BOUND:.0f}s)")
    assert admitted_after <= SHRINK_ADMIT_BOUND
    poll(phase(jobs, namespace, "high", "Running"), 60, "high Running")

    # low was shrunk, not evicted: 3 collectors (4 given back, exactly what high lacked), the same learner pod
    assert collectors(jobs, namespace, "low") == 3
    assert has_event(cluster, namespace, "low", "CollectorsShrunk", "gave back 4 collector", "7 -> 3")()
    low_wl = get_workload(cluster, namespace, "dijob-low")
    assert is_true(low_wl, "Admitted") and not is_true(low_wl, "Evicted")
    assert condition(low_wl or {}, "Requeued") is None
    assert not has_event(cluster, namespace, "low", "Evicted")()
    status = (jobs.get(namespace, "low") or {})["status"]
    assert status["phase"] == "Running" and status["restarts"] == 0
    shrunk = poll(
        lambda: (
            (c := condition(jobs.get(namespace, "low") or {}, "Running")) and c["reason"] == "CollectorsShrunk" and c
        ),
        30,
        "low's Running condition says it is shrunk",
    )
    assert "collector 3 of 7: 4 replica(s) given back" in shrunk["message"], shrunk
    poll(lambda: len(live_pods(cluster, namespace, "low")) == 4, 60, "low's 4 pods (learner + 3 collectors)")
    assert learner_uid(cluster, namespace, "low") == learner

    # the high job ends: its quota is released and low takes its collectors back
    poll(phase(jobs, namespace, "high", "Succeeded"), 120, "high Succeeded")
    ended = time.monotonic()
    poll(lambda: collectors(jobs, namespace, "low") == 7, 60, "low grown back to 7 collectors")
    print(f"low grown back {time.monotonic() - ended:.1f}s after high Succeeded")
    poll(lambda: len(live_pods(cluster, namespace, "low")) == 8, 60, "low's 8 pods again")
    assert has_event(cluster, namespace, "low", "CollectorsGrownBack", "3 -> 7 of 7")()
    body = jobs.get(namespace, "low") or {}
    assert "diengine/shrunk-from" not in (body["metadata"].get("annotations") or {})
    assert body["status"]["restarts"] == 0 and learner_uid(cluster, namespace, "low") == learner
    poll(
        lambda: (condition(jobs.get(namespace, "low") or {}, "Running") or {}).get("reason") == "JobRunning",
        30,
        "low's Running condition back to JobRunning",
    )
