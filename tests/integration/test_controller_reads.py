"""A steady-state reconcile reads nothing from the API server: it reads what the watches delivered.

The controller runs as in test_controller_jobs.py (a subprocess with the chart's ServiceAccount, so
the ConfigMap watch must be granted). Once a job runs, every one of its pods and its DIJob is touched
(an annotation: one watch event each, so one or more reconciles); the controller's own
``dihera_api_requests_total`` must show no GET and no LIST meanwhile.
"""

from __future__ import annotations

import re
import time
import urllib.request

import pytest
from kubernetes import client

from dihera.kube.jobs import JobStore
from tests.integration.conftest import Poll
from tests.integration.controllers import Controller
from tests.integration.jobs import job_pods, manifest, phase_is, task

pytestmark = pytest.mark.cluster
LONG = {"sim.dihera.io/run-seconds": "600"}
SAMPLE = re.compile(r'^dihera_api_requests_total\{kind="([^"]*)",verb="([^"]*)"\} (\S+)$', re.M)


def scrape(ctl: Controller) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{ctl.metrics_port}/metrics", timeout=5) as resp:
        return str(resp.read().decode())


def requests(text: str) -> dict[tuple[str, str], float]:
    """(verb, kind) → requests the controller's API client sent."""
    return {(verb, kind): float(n) for kind, verb, n in SAMPLE.findall(text)}


def reconciles(text: str) -> float:
    found = re.search(r"^dihera_reconcile_duration_seconds_count (\S+)$", text, re.M)
    return float(found.group(1)) if found else 0.0


def quiet(ctl: Controller, seconds: float = 2.0, timeout: float = 60) -> str:
    """Scrape until no reconcile ran for ``seconds``."""
    last, since, deadline = scrape(ctl), time.monotonic(), time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(0.3)
        now = scrape(ctl)
        if reconciles(now) != reconciles(last):
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= seconds:
            return now
    raise AssertionError(f"the controller kept reconciling for {timeout}s")


def test_a_steady_state_reconcile_sends_no_get_and_no_list(
    controller: Controller,
    cluster: client.ApiClient,
    namespace: str,
    poll: Poll,
) -> None:
    name = "steady"
    jobs = JobStore(cluster)
    jobs.create(manifest(name, namespace, task("learner", **LONG), task("collector", 2, **LONG)))
    poll(phase_is(jobs, namespace, name, "Running"), 90, f"{name} Running")
    before = quiet(controller)
    assert requests(before).get(("create", "workflows")) == 1  # the counter counts this controller's requests

    touch = {"metadata": {"annotations": {"test.dihera.io/touched": "1"}}}
    pods = job_pods(cluster, namespace, name)
    assert len(pods) == 3
    for pod in pods:
        client.CoreV1Api(cluster).patch_namespaced_pod(pod["metadata"]["name"], namespace, touch)
    client.CustomObjectsApi(cluster).patch_namespaced_custom_object(
        "diengine.opendilab.org", "v2alpha1", namespace, "dijobs", name, touch
    )
    poll(lambda: reconciles(scrape(controller)) > reconciles(before), 30, "a reconcile of the touched job")
    after = quiet(controller)

    was, now = requests(before), requests(after)
    sent = {key: n - was.get(key, 0) for key, n in now.items() if n > was.get(key, 0)}
    passes = reconciles(after) - reconciles(before)
    print(f"{passes:.0f} reconciles after 4 watch events; requests meanwhile: {sent or 'none'}")
    reads = {key: n for key, n in sent.items() if key[0] in ("get", "list")}
    assert not reads, f"{passes:.0f} steady-state reconciles read from the API server: {reads}"
    assert ((jobs.get(namespace, name) or {}).get("status") or {}).get("phase") == "Running"
