"""RBAC exactly as used: what the chart grants equals what the API server saw the components ask for.

The local control plane writes an audit log of every request made by a ServiceAccount of the
chart's namespace (ci/devcluster: ``--audit-policy-file``, Metadata level). This test runs the
controller (namespaced with leader election, then cluster-wide) and the di-server, each with a token of the
chart's ServiceAccount, through a representative scenario: create, run, an edited Service put back, hand
edit, server scale up and down, named removal, profilings, an Idempotency-Key, a Service left by a crashed
pass, a failing job
stopped by cleanPodPolicy and deleted by its ttlSecondsAfterFinished, a suspension, deletion. Then it reads the audit
log and compares, per ServiceAccount, the (verb, group, resource) used with the rules ``helm template``
renders (the controller's: its ClusterRole and its leader-election Role): a grant never used fails, and a
use not granted (a 403 in the log) fails.
"""

from __future__ import annotations

import json
import signal
import time
import uuid
from collections.abc import Iterable
from pathlib import Path

import httpx
import pytest
from kubernetes import client

from dihera import load_job
from dihera.kube.jobs import JobStore
from dihera.kube.objects import ObjectStore
from dihera.naming import service_name
from dihera.render.objects import owner_references
from dihera.schema import GROUP
from dihera.server import ServerSettings
from tests.chart.helm import Manifest, one, render
from tests.integration.conftest import Poll
from tests.integration.controllers import SA_NAMESPACE, Replica
from tests.integration.jobs import edit_replicas, manifest, phase_is, task
from tests.integration.lifecycle import set_suspend
from tests.integration.servers import running_server, sa_token

pytestmark = [pytest.mark.cluster, pytest.mark.exclusive]
Use = tuple[str, str, str]  # (verb, apiGroup, resource[/subresource])
CONTROLLER, SERVER = "dihera-controller", "dihera-server"
SA_PREFIX = "system:serviceaccount:dihera-system:"
LONG = {"sim.dihera.io/run-seconds": "600"}
STAGES = ("ResponseStarted", "ResponseComplete")  # a watch still open has only started

#: Grants the API server checks without a request of that verb on that resource, so no audit event
#: shows them; each is checked to be still needed.
NOT_REQUESTS: dict[str, dict[Use, str]] = {
    CONTROLLER: {
        ("update", GROUP, "dijobs/finalizers"): "ownerReferences with blockOwnerDeletion on a DIJob "
        "(OwnerReferencesPermissionEnforcement admission checks this verb on create)",
    },
    SERVER: {},
}


def granted(role: Manifest) -> set[Use]:
    return {
        (v, g, r) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]
    }


def used(lines: Iterable[str], user: str) -> tuple[set[Use], set[Use]]:
    """(uses, uses refused with 403) of ``user`` in audit log lines (resource requests only)."""
    uses, refused = set(), set()
    for line in lines:
        event = json.loads(line)
        ref = event.get("objectRef")
        if event.get("user", {}).get("username") != user or not ref or event.get("stage") not in STAGES:
            continue
        resource = ref["resource"] + (f"/{ref['subresource']}" if ref.get("subresource") else "")
        use = (event["verb"], ref.get("apiGroup", ""), resource)
        (refused if event.get("responseStatus", {}).get("code") == 403 else uses).add(use)
    return uses, refused


def compare(sa: str, uses: set[Use], refused: set[Use], grants: set[Use]) -> list[str]:
    """Every difference between what ``sa`` used and what it is granted, as a readable line."""
    exempt = set(NOT_REQUESTS[sa])
    problems = [f"{sa}: granted but never used: {u}" for u in sorted(grants - uses - exempt)]
    problems += [f"{sa}: used but not granted: {u}" for u in sorted((uses | refused) - grants)]
    problems += [f"{sa}: exemption not granted any more: {u}" for u in sorted(exempt - grants)]
    return problems


def audit_path(kubeconfig: Path) -> Path:
    """The dev cluster's audit log (next to its kubeconfig); skip on another cluster."""
    path = kubeconfig.parent / "logs" / "audit.log"
    if not path.exists():
        pytest.skip(f"no audit log at {path}: the cluster is not ci/devcluster (or predates its audit policy)")
    return path


class ClusterWide(Replica):
    """``dihera controller -A`` with leader election."""

    def __init__(self, kubeconfig: Path, lease: str, log: Path) -> None:
        super().__init__("ctl-all", kubeconfig, "unused", lease, log)
        self.argv[self.argv.index("-n") : self.argv.index("-n") + 2] = ["-A"]


def scenario_controller(api: client.ApiClient, namespace: str, server: str, token: str, poll: Poll) -> None:
    jobs = JobStore(api)
    core = client.CoreV1Api(api)
    # a Service left behind by a pass that crashed after creating it (the DIJob's own: its ownerReference; the
    # DIJob created suspended, so nothing else is created before it): "already exists" is read back
    elastic = manifest("elastic", namespace, task("learner", **LONG), task("collector", 2, **LONG), maxReplicas=8)
    owners = owner_references(load_job(jobs.create({**elastic, "spec": {**elastic["spec"], "suspend": True}})))
    core.create_namespaced_service(
        namespace,
        {
            "metadata": {"name": service_name("elastic"), "namespace": namespace, "ownerReferences": owners},
            "spec": {"clusterIP": "None", "selector": {"diengine/job": "elastic"}},
        },
    )
    set_suspend(api, namespace, "elastic", False)
    failing = task("collector", **{"sim.dihera.io/exit-code": "2", "sim.dihera.io/run-seconds": "1"})
    jobs.create(  # deleted by the controller 5 s after it failed (ttlSecondsAfterFinished)
        manifest(
            "failing",
            namespace,
            task("learner", **LONG),
            failing,
            backoffLimit=0,
            cleanPodPolicy="Running",
            ttlSecondsAfterFinished=5,
        )
    )
    # a job with a checkpoint volume: its claim is created (never bound here: no volume of its class exists)
    jobs.create(manifest("claimed", namespace, task("learner", **LONG), checkpoint={"storageClassName": "none"}))
    poll(phase_is(jobs, namespace, "elastic", "Running"), 120, "elastic Running")
    poll(lambda: core.list_namespaced_persistent_volume_claim(namespace).items, 60, "the checkpoint claim")
    # an edited Service is put back by the controller
    core.patch_namespaced_service(service_name("elastic"), namespace, {"spec": {"selector": {"diengine/job": "x"}}})
    poll(
        lambda: (
            core.read_namespaced_service(service_name("elastic"), namespace).spec.selector
            == {"diengine/job": "elastic"}
        ),
        30,
        "elastic's Service put back",
    )
    edit_replicas(api, namespace, "elastic", collector=3)  # the controller's own JobScaler
    poll(lambda: (jobs.get(namespace, "elastic") or {}).get("status", {}).get("replicas") == 4, 90, "4 replicas")
    http = httpx.Client(base_url=server, headers={"Authorization": f"Bearer {token}"}, timeout=60)
    job = f"{namespace}.elastic"
    for call in (
        lambda: http.post(f"/v2alpha1/job/{job}/replicas", json={"replicas": 1}, headers={"Idempotency-Key": "a"}),
        lambda: http.request("DELETE", f"/v2alpha1/job/{job}/replicas", json={"replicas": 1}),
        lambda: http.post(
            f"/v1/namespaces/{namespace}/dijobs/elastic/replicas:remove", json={"replicas": ["collector-0"]}
        ),
        lambda: http.post(f"/v2alpha1/job/{job}/profilings", json={"fps": 1}),
        lambda: http.get(f"/v2alpha1/job/{job}/replicas"),
        lambda: http.get(f"/v1/namespaces/{namespace}/dijobs/elastic"),
    ):
        resp = call()
        assert resp.status_code == 200, resp.text
    # A hand edit made while the spec is older than the membership is overwritten by design (docs/scaling.md,
    # dihera/scaling/spec_edit.py: CATCH_UP): wait until the spec has caught up with the di-server's scales.
    def caught_up() -> bool:
        body = jobs.get(namespace, "elastic") or {}
        stamp = (body.get("metadata", {}).get("annotations") or {}).get("diengine/membership-generation")
        counts = {t.get("name") or t["type"]: t["replicas"] for t in body.get("spec", {}).get("tasks", [])}
        return stamp == str(body.get("status", {}).get("membershipGeneration")) and counts.get("collector") == 2

    poll(caught_up, 60, "the spec caught up with the di-server's scales")
    edit_replicas(api, namespace, "elastic", collector=1)  # the controller removes one by itself
    failed = phase_is(jobs, namespace, "failing", "Failed")  # or already deleted by its TTL on a busy machine
    poll(lambda: failed() or jobs.get(namespace, "failing") is None, 120, "failing Failed (cleanPodPolicy stops it)")
    poll(lambda: (jobs.get(namespace, "elastic") or {}).get("status", {}).get("replicas") == 2, 90, "2 replicas")
    set_suspend(api, namespace, "elastic", True)  # the controller deletes its Workflow
    poll(lambda: ObjectStore(api).get_workflow(namespace, "elastic") is None, 60, "elastic's Workflow deleted")
    jobs.delete(namespace, "elastic")
    jobs.delete(namespace, "claimed")
    poll(lambda: jobs.get(namespace, "failing") is None, 60, "failing deleted by its ttlSecondsAfterFinished")


def test_every_grant_is_used_and_every_use_granted(
    kubeconfig: Path,
    cluster: client.ApiClient,
    dijob_crd: None,
    namespace: str,
    controller_kubeconfig: Path,
    server_kubeconfig: Path,
    tmp_path: Path,
    poll: Poll,
) -> None:
    log = audit_path(kubeconfig)
    start = log.stat().st_size
    token = sa_token(cluster, namespace, "caller", ["get", "patch"], report=True)
    lease = f"dihera-audit-{uuid.uuid4().hex[:6]}"
    ctl = Replica("ctl-ns", controller_kubeconfig, namespace, lease, tmp_path / "ctl.log")
    wide = ClusterWide(controller_kubeconfig, lease, tmp_path / "wide.log")
    settings = ServerSettings(namespaces=(namespace,), auth_cache_seconds=0.0)
    try:
        ctl.start()
        with running_server(settings, server_kubeconfig) as server:
            scenario_controller(cluster, namespace, server, token, poll)
        ctl.kill(signal.SIGTERM)
        wide.start()  # cluster-wide: every namespace's DIJobs are watched; the Lease is taken and renewed
        poll(wide.leading, 60, "the cluster-wide controller to lead")
        time.sleep(5)  # Lease renewals, watches of every namespace
        wide.kill(signal.SIGTERM)
    finally:
        for r in (ctl, wide):
            r.kill(signal.SIGTERM)
            print(f"----- {r.identity} -----\n" + "\n".join(r.lines("")[-80:]))
        client.CoordinationV1Api(cluster).delete_namespaced_lease(lease, SA_NAMESPACE)
    time.sleep(2)  # the API server flushes its audit batch
    with log.open() as f:
        f.seek(start)
        lines = f.read().splitlines()
    rendered = render()
    problems = []
    for sa in (CONTROLLER, SERVER):
        uses, refused = used(lines, SA_PREFIX + sa)
        print(f"{sa} used: {sorted(uses)}")
        grants = granted(one(rendered, "ClusterRole", sa))
        if sa == CONTROLLER:
            grants |= granted(one(rendered, "Role", f"{sa}-leader-election", SA_NAMESPACE))
        problems += compare(sa, uses, refused, grants)
    assert not problems, "\n".join(problems)
    # the exemption is still needed: what the controller creates names its DIJob with blockOwnerDeletion
    job = load_job({**manifest("x", namespace, task("learner")), "metadata": {"name": "x", "uid": "u"}})
    assert all(ref["blockOwnerDeletion"] for ref in owner_references(job))


def test_compare_catches_an_over_grant_and_a_missing_grant() -> None:
    """The comparison itself, on the chart's real controller rules plus a deliberate over-grant."""
    rules = granted(one(render(), "ClusterRole", CONTROLLER))
    uses = rules - set(NOT_REQUESTS[CONTROLLER])
    assert compare(CONTROLLER, uses, set(), rules) == []
    over = rules | {("deletecollection", "", "configmaps")}
    assert compare(CONTROLLER, uses, set(), over) == [
        f"{CONTROLLER}: granted but never used: ('deletecollection', '', 'configmaps')"
    ]
    missing = uses | {("deletecollection", "", "pods")}
    assert compare(CONTROLLER, missing, set(), rules) == [
        f"{CONTROLLER}: used but not granted: ('deletecollection', '', 'pods')"
    ]
