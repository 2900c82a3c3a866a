"""Faults of the control plane in the middle of an operation (issue 42).

One job on kwok nodes (a learner and four collectors, running until deleted) under the test's controller,
and three components of the local control plane SIGKILLed, each in the middle of an operation on it, then
started again on the same port and data:

- Argo's workflow-controller, down while the job is scaled down 4 -> 2 collectors;
- kube-apiserver, killed right after the job was scaled up 2 -> 5 (while the controller is syncing it);
- etcd, killed right after ``spec.suspend: true`` (while the controller is stopping the job).

After each, within the bound the test states once the component is back: the job has exactly the replicas
its spec says, Running (or Suspended: no pod); every replica that stayed is the same pod (same uid, rank and
hostname: never restarted); a retired replica never comes back; the scale was applied exactly once (the
membership generation moved by one); there is one Workflow; no pod is left that is not the job's; the
controller process is still the one started (it rode out the fault through its watches). The recovery time of
each is printed.
"""

from __future__ import annotations

import copy
import signal
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import urllib3
from kubernetes import client

from ci.devcluster import Cluster, Settings
from dihera.kube.jobs import JobStore
from dihera.schema import GROUP, PLURAL, VERSION
from tests.integration.conftest import Poll
from tests.integration.controllers import Controller, denied
from tests.integration.elastic import NAME, live_pods, settled, status_of
from tests.integration.jobs import edit_replicas, job_pods, manifest, task
from tests.integration.lifecycle import set_suspend

pytestmark = [pytest.mark.cluster, pytest.mark.exclusive]

#: How long after the component is ready again the job must be where its spec says (seconds).
RECOVERY_BOUND = 60
#: After the job settled, how long a retired replica is watched for not coming back (seconds).
QUIET = 10
FOREVER = "3600"  # kwok pods "run" this long: the job runs until the test deletes it


@pytest.fixture(scope="module")
def dev(kubeconfig: Path) -> Iterator[Cluster]:
    """The local control plane, whose processes the test may kill; skipped on another cluster."""
    cluster = Cluster(Settings.from_environ())
    if not (cluster.state.exists() and cluster.kubeconfig.resolve() == kubeconfig.resolve()):
        pytest.skip("faults are injected into the local control plane only; $KUBECONFIG names another cluster")
    yield cluster
    cluster.up()  # whatever a failed test left stopped is started again for the tests after it


#: (killed, ready again) local times of each API server outage of the module: while the API server starts,
#: its RBAC authorizer denies what its caches do not hold yet (a 403 the controller retries).
API_SERVER_DOWN: list[tuple[datetime, datetime]] = []


@pytest.fixture
def controller(controller_kubeconfig: Path, dijob_crd: None, namespace: str, tmp_path: Path) -> Iterator[Controller]:
    """conftest's controller, where a 403 is a missing permission unless it came while the API server started."""
    ctl = Controller(controller_kubeconfig, namespace, tmp_path / "controller.log")
    ctl.start()
    try:
        yield ctl
    finally:
        ctl.kill(signal.SIGTERM)
        print(ctl.logs()[-6000:])
        late = [line for line in denied(ctl.logs()) if not any(a <= logged_at(line) <= b for a, b in API_SERVER_DOWN)]
        assert not late, f"the controller lacked a permission:\n{late[0]}"


def logged_at(line: str) -> datetime:
    return datetime.fromisoformat(line.split(" ", 1)[0].removeprefix("time="))


def api_server_outage(dev: Cluster, seconds: float) -> None:
    """SIGKILL kube-apiserver, start it again `seconds` later, wait until it is ready; the window recorded."""
    killed = datetime.now()
    dev.kill("kube-apiserver")
    time.sleep(seconds)
    dev.restart("kube-apiserver")
    API_SERVER_DOWN.append((killed, datetime.now() + timedelta(seconds=1)))


def identities(pods: dict[str, dict[str, Any]]) -> dict[str, tuple[str, str]]:
    """hostname -> (pod uid, rank)."""
    return {h: (p["metadata"]["uid"], p["metadata"]["annotations"]["diengine/rank"]) for h, p in pods.items()}


def workflows(cluster: client.ApiClient, namespace: str) -> list[dict[str, Any]]:
    listing = client.CustomObjectsApi(cluster).list_namespaced_custom_object(
        "argoproj.io", "v1alpha1", namespace, "workflows"
    )
    return list(listing["items"])


def hosts_of(collectors: int) -> set[str]:
    return {f"{NAME}-learner-0", *(f"{NAME}-collector-{i}" for i in range(collectors))}


def seen_for(cluster: client.ApiClient, namespace: str, seconds: float) -> set[str]:
    """Every hostname with a live pod of the job, sampled every 0.5 s for `seconds`."""
    seen: set[str] = set()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        seen |= set(live_pods(cluster, namespace))
        time.sleep(0.5)
    return seen


def test_control_plane_components_killed_mid_operation_lose_and_double_nothing(
    dev: Cluster, controller: Controller, cluster: client.ApiClient, namespace: str, poll: Poll
) -> None:
    jobs = JobStore(cluster)
    run = {"sim.dihera.io/run-seconds": FOREVER}
    jobs.create(manifest(NAME, namespace, task("learner", **run), task("collector", 4, **run), maxReplicas=8))
    before, status = poll(lambda: settled(cluster, jobs, namespace, hosts_of(4), 5, 0), 90, "5 replicas Running")
    generation = status["membershipGeneration"]
    (workflow,) = workflows(cluster, namespace)
    pid = controller.proc.pid if controller.proc else None
    recovered: dict[str, float] = {}

    def converged(replicas: int, reschedules: int) -> dict[str, dict[str, Any]] | None:
        """`replicas` live pods, all Running, and the status saying so; the pods by hostname."""
        pods = live_pods(cluster, namespace)
        if len(pods) != replicas or any(p["status"]["phase"] != "Running" for p in pods.values()):
            return None
        st = status_of(jobs, namespace)
        ok = (st.get("phase"), st.get("replicas"), st.get("reschedules")) == ("Running", replicas, reschedules)
        return pods if ok else None

    def check_after(kept: dict[str, tuple[str, str]], generations: int) -> dict[str, Any]:
        pods = live_pods(cluster, namespace)
        now = identities(pods)
        assert {h: now[h] for h in kept} == kept, f"a replica that stayed was restarted: {kept} -> {now}"
        ranks = [rank for _, rank in now.values()]
        assert len(set(ranks)) == len(ranks), now
        st = status_of(jobs, namespace)
        assert st["membershipGeneration"] == generation + generations, (st, generation, generations)
        assert [w["metadata"]["uid"] for w in workflows(cluster, namespace)] == [workflow["metadata"]["uid"]]
        every = {p["metadata"]["name"] for p in job_pods(cluster, namespace, NAME)}
        alive = {p["metadata"]["name"] for p in pods.values()}
        assert every == alive, f"pods left behind: {sorted(every - alive)}"
        return st

    # 1. Argo's workflow-controller down while 4 -> 2 collectors: nothing happens until it is back, then the
    #    two retire, and stay retired
    dev.kill("workflow-controller")
    edit_replicas(cluster, namespace, collector=2)
    time.sleep(5)  # the controller has written the Workflow by now; nobody acts on it
    assert set(live_pods(cluster, namespace)) == hosts_of(4), "pods changed with no workflow-controller"
    dev.restart("workflow-controller")
    back = time.monotonic()
    poll(lambda: settled(cluster, jobs, namespace, hosts_of(2), 3, 1), RECOVERY_BOUND, "the scale-down applied")
    recovered["workflow-controller (scale-down 4 -> 2)"] = time.monotonic() - back
    kept = {h: v for h, v in identities(before).items() if h in hosts_of(2)}
    seen = seen_for(cluster, namespace, QUIET)
    assert seen == hosts_of(2), f"a retired replica came back: {sorted(seen - hosts_of(2))}"
    check_after(kept, 1)

    # 2. kube-apiserver SIGKILLed right after 2 -> 5: the controller's write may or may not have landed
    edit_replicas(cluster, namespace, collector=5)
    api_server_outage(dev, 3)
    back = time.monotonic()
    grown = poll(lambda: converged(6, 2), RECOVERY_BOUND, "the scale-up applied")
    added = sorted(set(grown) - set(kept))
    assert len(added) == 3 and all("-collector-" in h for h in added), added  # new indexes: retired ones stay so
    recovered["kube-apiserver (scale-up 2 -> 5)"] = time.monotonic() - back
    check_after(kept, 2)
    kept = identities(grown)

    # 3. etcd SIGKILLed right after suspend: the job ends Suspended with no pod; resumed, the same ranks
    set_suspend(cluster, namespace, NAME, True)
    dev.kill("etcd")
    time.sleep(3)
    dev.restart("etcd")
    back = time.monotonic()

    def suspended() -> dict[str, Any] | None:
        st = status_of(jobs, namespace)
        return st if st.get("phase") == "Suspended" and not job_pods(cluster, namespace, NAME) else None

    poll(suspended, RECOVERY_BOUND, "Suspended with no pod")
    recovered["etcd (suspend)"] = time.monotonic() - back
    set_suspend(cluster, namespace, NAME, False)

    def resumed() -> dict[str, Any] | None:
        pods = live_pods(cluster, namespace)
        st = status_of(jobs, namespace)
        running = set(pods) == set(kept) and all(p["status"]["phase"] == "Running" for p in pods.values())
        return pods if running and st.get("phase") == "Running" else None

    again = poll(resumed, RECOVERY_BOUND, "Running again after resume")
    assert {h: rank for h, (_, rank) in identities(again).items()} == {h: rank for h, (_, rank) in kept.items()}
    assert len(workflows(cluster, namespace)) == 1

    assert controller.proc is not None and controller.proc.poll() is None and controller.proc.pid == pid
    figures = ", ".join(f"{k}: {v:.1f} s" for k, v in recovered.items())
    print(f"\n[faults] from the component ready again to the job where its spec says: {figures}")


#: The burst: this many DIJobs created one after another while the API server and then Argo are killed.
BURST = 20


def create_until_stored(jobs: JobStore, body: dict[str, Any], deadline: float) -> int:
    """Create `body` as a client does through an outage: retry on a connection error or a 5xx until the API
    server answers; an AlreadyExists after a lost answer means the first try was stored. Tries it took."""
    tries = 0
    while True:
        tries += 1
        try:
            jobs.create(copy.deepcopy(body))
            return tries
        except client.ApiException as err:
            if err.status == 409:
                return tries
            if err.status < 500 or time.monotonic() > deadline:
                raise
        except (urllib3.exceptions.HTTPError, OSError):
            if time.monotonic() > deadline:
                raise
        time.sleep(0.5)


def test_a_burst_of_creations_through_an_api_server_and_an_argo_restart_makes_each_job_once(
    dev: Cluster, controller: Controller, cluster: client.ApiClient, namespace: str, poll: Poll
) -> None:
    """20 DIJobs created back to back; the API server SIGKILLed after the 5th and started 3 s later, Argo's
    workflow-controller SIGKILLed after the 12th and started 5 s later. Every job exists once, has exactly one
    Workflow (owned by it) and Succeeds; no pod is left running."""
    jobs = JobStore(cluster)
    names = [f"burst-{i:02d}" for i in range(BURST)]
    tries: dict[str, int] = {}
    deadline = time.monotonic() + 120
    restarts: list[threading.Thread] = []

    def outage(component: str, seconds: float) -> None:
        if component == "kube-apiserver":
            api_server_outage(dev, seconds)
            return
        dev.kill(component)
        time.sleep(seconds)
        dev.restart(component)

    for i, name in enumerate(names):
        body = manifest(name, namespace, task("learner", **{"sim.dihera.io/run-seconds": "5"}), task("collector"))
        tries[name] = create_until_stored(jobs, body, deadline)
        if i in (4, 11):
            component, seconds = ("kube-apiserver", 3.0) if i == 4 else ("workflow-controller", 5.0)
            restarts.append(threading.Thread(target=outage, args=(component, seconds)))
            restarts[-1].start()
    for thread in restarts:
        thread.join(timeout=120)
    back = time.monotonic()

    def all_succeeded() -> list[dict[str, Any]] | None:
        found = [jobs.get(namespace, name) for name in names]
        done = [j for j in found if j and (j.get("status") or {}).get("phase") == "Succeeded"]
        return done if len(done) == BURST else None

    done = poll(all_succeeded, 180, f"all {BURST} DIJobs Succeeded")
    settled_in = time.monotonic() - back
    owners: dict[str, list[str]] = {}
    for wf in workflows(cluster, namespace):
        for ref in wf["metadata"].get("ownerReferences", []):
            owners.setdefault(ref["uid"], []).append(wf["metadata"]["name"])
    doubled = {j["metadata"]["name"]: owners.get(j["metadata"]["uid"]) for j in done}
    assert all(len(wfs or []) == 1 for wfs in doubled.values()), doubled
    every = client.CustomObjectsApi(cluster).list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)
    assert sorted(j["metadata"]["name"] for j in every["items"]) == names
    pods = client.CoreV1Api(cluster).list_namespaced_pod(namespace).items
    running = [p.metadata.name for p in pods if p.status.phase in ("Pending", "Running")]
    assert not running, running
    retried = {name: n for name, n in tries.items() if n > 1}
    print(
        f"\n[faults] burst of {BURST}: every job once, one Workflow each; creations retried through the outage "
        f"{retried}; all Succeeded {settled_in:.1f} s after the last component was back"
    )
