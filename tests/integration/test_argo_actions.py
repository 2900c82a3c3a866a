"""What the Argo UI's action buttons do to a running DIJob, and what deleting its Service or membership
ConfigMap by hand does (marker ``cluster``; kwok nodes; docs/argo-ui.md, "Actions on a DIJob's Workflow").

The actions are the argo server's calls the UI makes (``PUT /api/v1/workflows/{ns}/{name}/{action}``,
``DELETE`` for DELETE), on one job each, all at once. The chart's admission policy is applied as the chart
renders it. While the jobs run, a watcher lists their pods every half second: no two live pods of a job may
ever share a hostname.
"""

from __future__ import annotations

import itertools
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from playwright.sync_api import Locator, Page

from ci.devcluster import Cluster, Settings
from dihera.kube.jobs import JobStore
from dihera.naming import membership_configmap_name, service_name
from tests.chart.helm import render
from tests.integration.argo_ui import browser_page, expect_text, screenshot, wait_for
from tests.integration.conftest import Poll
from tests.integration.controllers import Controller
from tests.integration.jobs import edit_replicas, manifest, phase_is, task
from tests.integration.lifecycle import has_event

pytestmark = pytest.mark.cluster
LONG = {"sim.dihera.io/run-seconds": "900"}
#: Seconds an action's outcome may take to show in the DIJob (the controller acts on the Workflow's watch event).
BOUND = 30.0
ACTIONS = ("resubmit", "retry", "suspend", "resume", "stop", "terminate", "delete")


@pytest.fixture(scope="module")
def argo_server(kubeconfig: Path) -> str:
    """The argo server's URL on the local control plane (the API the Argo UI calls)."""
    dev = Cluster(Settings.from_environ())
    url = dev.argo_ui_url()
    if kubeconfig.resolve() != dev.kubeconfig.resolve() or url is None:
        pytest.skip("the argo server runs on the local control plane of a pair with its loopback main (v4)")
    return url


@pytest.fixture(scope="module")
def admission_policy(cluster: client.ApiClient) -> Iterator[None]:
    """The chart's ValidatingAdmissionPolicy of DIJob Workflows and its binding, applied for the module, removed
    after it (not the one of the service accounts' own objects: tests/integration/test_admission_own_objects.py)."""
    objs = [
        o
        for o in render()
        if o["kind"].startswith("ValidatingAdmissionPolicy") and o["metadata"]["name"] == "dihera-dijob-workflows"
    ]
    assert [o["kind"] for o in objs] == ["ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"]
    api = client.AdmissionregistrationV1Api(cluster)
    for obj in objs:
        create = (
            api.create_validating_admission_policy
            if obj["kind"] == "ValidatingAdmissionPolicy"
            else (api.create_validating_admission_policy_binding)
        )
        try:
            create(obj)
        except ApiException as err:
            if err.status != 409:
                raise
    time.sleep(2)  # the API server loads the policy (its informer) before it enforces it
    yield
    api.delete_validating_admission_policy_binding(objs[1]["metadata"]["name"])
    api.delete_validating_admission_policy(objs[0]["metadata"]["name"])


class HostnameWatch:
    """Lists the namespace's pods every half second; remembers every time two live pods of a job shared a
    hostname (live: not being deleted, not finished), and when it looked."""

    def __init__(self, cluster: client.ApiClient, namespace: str) -> None:
        self._core, self._namespace = client.CoreV1Api(cluster), namespace
        self.seen: list[str] = []
        self.looks: list[float] = []  # monotonic times
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> HostnameWatch:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            hosts: dict[tuple[str, str], list[str]] = {}
            for pod in self._core.list_namespaced_pod(self._namespace, label_selector="diengine/job").items:
                live = pod.metadata.deletion_timestamp is None and pod.status.phase in ("Pending", "Running")
                if live and pod.spec.hostname:
                    hosts.setdefault((pod.metadata.labels["diengine/job"], pod.spec.hostname), []).append(
                        pod.metadata.name
                    )
            self.looks.append(time.monotonic())
            self.seen += [f"{job}/{host}: {pods}" for (job, host), pods in hosts.items() if len(pods) > 1]


def argo(server: str, namespace: str, name: str, action: str) -> httpx.Response:
    """The Argo UI's call for ``action`` on the Workflow ``namespace/name``."""
    with httpx.Client(base_url=server, timeout=30) as http:
        path = f"/api/v1/workflows/{namespace}/{name}"
        if action == "delete":
            return http.delete(path)
        body: dict[str, Any] = {"name": name, "namespace": namespace}
        if action == "resubmit":
            body["memoized"] = False
        return http.put(f"{path}/{action}", json=body)


def workflow_phase(custom: client.CustomObjectsApi, namespace: str, name: str) -> str | None:
    found: Any = custom.get_namespaced_custom_object("argoproj.io", "v1alpha1", namespace, "workflows", name)
    return (found.get("status") or {}).get("phase")


def status(jobs: JobStore, namespace: str, name: str) -> dict[str, Any]:
    return dict((jobs.get(namespace, name) or {}).get("status") or {})


def test_every_argo_ui_action_ends_in_its_documented_state_and_no_hostname_runs_twice(
    controller: Controller,
    admission_policy: None,
    argo_server: str,
    cluster: client.ApiClient,
    namespace: str,
    poll: Poll,
) -> None:
    jobs = JobStore(cluster)
    custom = client.CustomObjectsApi(cluster)
    for action in ACTIONS:
        if action == "retry":  # a job that fails: a collector exits 3, no retry left
            failing = task("collector", 1, **{"sim.dihera.io/exit-code": "3", "sim.dihera.io/run-seconds": "2"})
            jobs.create(manifest(action, namespace, task("learner", **LONG), failing, backoffLimit=0))
        else:
            jobs.create(manifest(action, namespace, task("learner", **LONG), task("collector", 2, **LONG)))
    with HostnameWatch(cluster, namespace) as watch:
        for action in ACTIONS:
            poll(phase_is(jobs, namespace, action, "Failed" if action == "retry" else "Running"), 120, action)
        poll(lambda: workflow_phase(custom, namespace, "retry") in ("Failed", "Error"), 60, "retry's Workflow ended")
        answers = {a: argo(argo_server, namespace, a, a) for a in ACTIONS}
        acted = time.monotonic()
        # RESUBMIT: refused by the admission policy (the UI shows the API server's message); no copy exists
        assert answers["resubmit"].status_code >= 400, answers["resubmit"].text
        assert "a second time under the same hostnames" in answers["resubmit"].text
        # RETRY of a finished job's Workflow: refused; the DIJob stays Failed
        assert answers["retry"].status_code >= 400 and "has ended" in answers["retry"].text, answers["retry"].text
        # SUSPEND: the DIJob is suspended (spec.suspend), its Workflow deleted, ranks kept
        poll(phase_is(jobs, namespace, "suspend", "Suspended"), BOUND, "suspend: the DIJob Suspended")
        assert (jobs.get(namespace, "suspend") or {})["spec"]["suspend"] is True
        poll(has_event(cluster, namespace, "suspend", "SuspendedInArgo", "kubectl patch dijob"), BOUND, "its Event")
        # STOP and TERMINATE end the job, Failed, the reason naming the action
        for action, reason in (("stop", "WorkflowStopped"), ("terminate", "WorkflowTerminated")):
            assert answers[action].status_code == 200, answers[action].text
            ended = poll(phase_is(jobs, namespace, action, "Failed"), BOUND, f"{action}: the DIJob Failed")
            assert ended["conditions"][-1]["reason"] == reason, ended["conditions"]
            poll(has_event(cluster, namespace, action, reason, "from outside dihera"), BOUND, f"{action}: its Event")
        # DELETE: the job fails, saying the Workflow was deleted
        poll(phase_is(jobs, namespace, "delete", "Failed"), BOUND, "delete: the DIJob Failed")
        poll(has_event(cluster, namespace, "delete", "WorkflowDeleted", "was deleted"), BOUND, "delete: its Event")
        # RESUME of a running (not suspended) Workflow changes nothing
        time.sleep(3)
        assert status(jobs, namespace, "resume")["phase"] == "Running"
        assert status(jobs, namespace, "resume").get("restarts", 0) == 0
        time.sleep(2)  # the watcher looks a few more times after the last action
    listed = custom.list_namespaced_custom_object("argoproj.io", "v1alpha1", namespace, "workflows")
    names = sorted(w["metadata"]["name"] for w in listed["items"])
    assert not [n for n in names if n.startswith("resubmit-")], f"a copy of resubmit's Workflow exists: {names}"
    assert status(jobs, namespace, "retry")["phase"] == "Failed"
    # the watcher looked before the actions, after them and all along (a list may take a while under load)
    looks = watch.looks
    gaps = [b - a for a, b in itertools.pairwise(looks)]
    assert looks and looks[0] < acted < looks[-1] and max(gaps) < 5, (len(looks), acted - looks[0], max(gaps))
    assert not watch.seen, f"two live pods shared a hostname: {watch.seen}"


def test_a_deleted_service_and_membership_configmap_come_back_and_a_scale_up_then_completes(
    controller: Controller,
    cluster: client.ApiClient,
    namespace: str,
    poll: Poll,
) -> None:
    jobs = JobStore(cluster)
    core = client.CoreV1Api(cluster)
    name = "repaired"
    jobs.create(manifest(name, namespace, task("learner", **LONG), task("collector", 2, **LONG), maxReplicas=6))
    poll(phase_is(jobs, namespace, name, "Running"), 120, "Running")
    before_cm = core.read_namespaced_config_map(membership_configmap_name(name), namespace).data
    before_svc = core.read_namespaced_service(service_name(name), namespace).spec
    deleted = time.monotonic()
    core.delete_namespaced_service(service_name(name), namespace)
    core.delete_namespaced_config_map(membership_configmap_name(name), namespace)

    def both_back() -> bool:
        try:
            core.read_namespaced_service(service_name(name), namespace)
            core.read_namespaced_config_map(membership_configmap_name(name), namespace)
        except ApiException as err:
            if err.status == 404:
                return False
            raise
        return True

    poll(both_back, 10, "the Service and the ConfigMap back within 10 s")
    back = time.monotonic() - deleted
    after_cm = core.read_namespaced_config_map(membership_configmap_name(name), namespace).data
    assert after_cm == before_cm, "the membership came back as it was: same ranks, hostnames, node lists"
    after_svc = core.read_namespaced_service(service_name(name), namespace).spec
    assert (after_svc.selector, after_svc.cluster_ip) == (before_svc.selector, "None")
    for reason in ("ServiceRepaired", "MembershipRepaired"):
        poll(has_event(cluster, namespace, name, reason, "deleted"), BOUND, reason)
    # an edit is put back too
    core.patch_namespaced_service(service_name(name), namespace, {"spec": {"selector": {"diengine/job": "other"}}})
    poll(
        lambda: core.read_namespaced_service(service_name(name), namespace).spec.selector == {"diengine/job": name},
        10,
        "the Service's selector put back",
    )
    edit_replicas(cluster, namespace, name, collector=3)
    settled = poll(
        lambda: (s := status(jobs, namespace, name)).get("replicas") == 4 and s.get("phase") == "Running" and s,
        90,
        "the scale-up to 3 collectors Running",
    )
    assert settled["membershipGeneration"] == 2
    print(f"the Service and the ConfigMap back {back:.1f} s after they were deleted")


def enabled_button(page: Page | Locator, name: str) -> Locator | None:
    """The first visible, enabled button whose text is ``name`` (any case: the UI upper-cases with CSS) in
    ``page`` (or a part of it), if it shows one. (By its text, not its accessible name: that holds the
    glyph of its Font Awesome icon.)"""
    found = page.locator("button").filter(has_text=re.compile(rf"^\s*{re.escape(name)}\s*$", re.IGNORECASE))
    for i in range(found.count()):
        button = found.nth(i)
        if button.is_visible() and button.is_enabled():
            return button
    return None


def test_resubmit_and_suspend_clicked_in_the_real_argo_ui(
    controller: Controller,
    admission_policy: None,
    argo_server: str,
    cluster: client.ApiClient,
    namespace: str,
    poll: Poll,
) -> None:
    """A person in the Argo UI: on a running DIJob's Workflow page, RESUBMIT (its panel's Resubmit button)
    shows the admission policy's refusal and makes no copy; SUSPEND (and its confirmation) suspends the DIJob
    the DIJob way: spec.suspend, phase Suspended, an Event saying to use the DIJob next time."""
    jobs = JobStore(cluster)
    custom = client.CustomObjectsApi(cluster)
    name = "clicked"
    jobs.create(manifest(name, namespace, task("learner", **LONG), task("collector", 2, **LONG)))
    poll(phase_is(jobs, namespace, name, "Running"), 120, "the DIJob Running")
    shots = Cluster(Settings.from_environ()).state.screenshots
    with HostnameWatch(cluster, namespace) as watch, browser_page() as page:
        page.goto(f"{argo_server}/workflows/{namespace}/{name}")
        wait_for(page, lambda: enabled_button(page, "SUSPEND"), "the toolbar, SUSPEND enabled (a running Workflow)")
        wait_for(page, lambda: enabled_button(page, "RESUBMIT"), "the RESUBMIT button").click()
        panel = page.locator(".sliding-panel")
        wait_for(page, lambda: enabled_button(panel, "Resubmit"), "the Resubmit panel's button").click()
        expect_text(page, ["a second time under the same hostnames"], "the admission policy's refusal in the panel")
        screenshot(page, shots, "argo-ui-resubmit-refused")
        listed = custom.list_namespaced_custom_object("argoproj.io", "v1alpha1", namespace, "workflows")
        assert [w["metadata"]["name"] for w in listed["items"]] == [name], "RESUBMIT made a copy"

        page.goto(f"{argo_server}/workflows/{namespace}/{name}")
        wait_for(page, lambda: enabled_button(page, "SUSPEND"), "SUSPEND enabled").click()
        expect_text(page, ["Are you sure you want to suspend this workflow?"], "SUSPEND's confirmation")
        wait_for(page, lambda: enabled_button(page, "OK"), "the confirmation's OK").click()
        suspended = poll(phase_is(jobs, namespace, name, "Suspended"), BOUND, "the DIJob Suspended")
        assert (jobs.get(namespace, name) or {})["spec"]["suspend"] is True, suspended
        poll(has_event(cluster, namespace, name, "SuspendedInArgo", "kubectl patch dijob"), BOUND, "its Event")
        screenshot(page, shots, "argo-ui-suspended")
    assert len(watch.looks) > 5 and not watch.seen, f"two live pods shared a hostname: {watch.seen}"
