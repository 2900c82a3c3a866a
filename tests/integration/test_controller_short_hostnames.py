"""The controller runs a job whose membership has short-hostname replicas (docs/rendering.md, "Names in
the node lists"), on kwok.

A job gets short hostnames only past ~2,000 replicas (test_big_job.py at full size, make test-big); here the
membership is made small: the job's membership ConfigMap is written first (the DIJob created suspended, the
ConfigMap owned by it), as a resumed job finds it, with its collectors but index 0 marked short (what the
planner marks when their long names do not fit). The controller renders the Workflow from it: the short
replicas run the ``collector-short`` template, their pods have the hostnames ``collector-<index>`` and keep
the label ``diengine/pod`` = ``<job>-collector-<index>``; the status counts them. A hand edit then adds a
collector (a long hostname: it fits) to the Workflow that holds the short template.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from kubernetes import client

from dihera import RenderSettings, load_job, plan_membership, render
from dihera.kube.jobs import JobStore
from dihera.membership import Membership
from dihera.scaling import read_dag
from dihera.schema import GROUP, PLURAL, VERSION
from tests.integration.conftest import Poll
from tests.integration.controllers import Controller
from tests.integration.elastic import container_env, live_pods, settled
from tests.integration.jobs import edit_replicas, manifest, task

pytestmark = pytest.mark.cluster
NAME = "elastic"


def test_short_hostname_replicas_run_with_their_hostnames_and_are_counted(
    controller: Controller,
    cluster: client.ApiClient,
    namespace: str,
    poll: Poll,
) -> None:
    jobs, core, custom = JobStore(cluster), client.CoreV1Api(cluster), client.CustomObjectsApi(cluster)
    domain = f"di-{NAME}.{namespace}.svc.cluster.local"
    learner, collectors = task("learner"), task("collector", 3)
    for t in (learner, collectors):
        t["template"]["metadata"]["annotations"]["sim.dihera.io/run-seconds"] = "60"
    # suspended first: nothing is created, so its membership ConfigMap can be written (owned by the DIJob, as the
    # controller only ever reads its own) before the job starts
    job = load_job(jobs.create(manifest(NAME, namespace, learner, collectors, maxReplicas=8, suspend=True)))
    first = plan_membership(job, None)
    short = Membership(
        first.generation,
        tuple(replace(r, short=r.task == "collector" and r.index > 0) for r in first.replicas),
    )
    configmap = render(job, RenderSettings(), short).configmap
    assert configmap["metadata"]["ownerReferences"][0]["uid"] == job.uid
    core.create_namespaced_config_map(namespace, configmap)
    custom.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, NAME, {"spec": {"suspend": False}},
        _content_type="application/merge-patch+json",
    )  # fmt: skip

    hosts = {f"{NAME}-learner-0", *(f"{NAME}-collector-{i}" for i in range(3))}  # diengine/pod: the long form
    pods, status = poll(lambda: settled(cluster, jobs, namespace, hosts, 4, 0), 90, "4 replicas Running, status")
    assert status["taskStatus"] == {"learner": {"Running": 1}, "collector": {"Running": 3}}
    workflow = custom.get_namespaced_custom_object("argoproj.io", "v1alpha1", namespace, "workflows", NAME)
    templates = [t["name"] for t in workflow["spec"]["templates"]]
    assert templates == ["dijob", "learner", "collector", "collector-short"]
    dag = {t["name"]: t["template"] for t in workflow["spec"]["templates"][0]["dag"]["tasks"]}
    assert dag == {"learner-0": "learner", "collector-0": "collector", "collector-1": "collector-short",
                   "collector-2": "collector-short"}  # fmt: skip
    cm = core.read_namespaced_config_map(f"di-{NAME}", namespace).data
    order = [f"{NAME}-learner-0", f"{NAME}-collector-0", "collector-1", "collector-2"]
    assert cm["DI_NODES"].split(",") == [f"{h}.{domain}" for h in order]
    for rank, host in enumerate(order):
        pod = pods[f"{NAME}-{host}" if not host.startswith(NAME) else host]
        env = container_env(pod, cm)
        assert pod["spec"]["hostname"] == host and pod["spec"]["subdomain"] == f"di-{NAME}"
        assert (env["DI_RANK"], env["DI_FQDN"], env["DI_NODES"].split(",")[rank]) == (
            str(rank),
            f"{host}.{domain}",
            f"{host}.{domain}",
        )

    # one more collector: it fits, so a long hostname; the Workflow keeps its short template
    edit_replicas(cluster, namespace, collector=4)
    hosts.add(f"{NAME}-collector-3")
    grown, status = poll(lambda: settled(cluster, jobs, namespace, hosts, 5, 1), 90, "5 replicas Running, status")
    assert grown[f"{NAME}-collector-3"]["spec"]["hostname"] == f"{NAME}-collector-3"
    assert {h: p["metadata"]["uid"] for h, p in grown.items() if h in pods} == {
        h: p["metadata"]["uid"] for h, p in pods.items()
    }, "a survivor moved"
    membership = Membership.from_json(core.read_namespaced_config_map(f"di-{NAME}", namespace).data["membership.json"])
    assert [(r.rank, r.index, r.short) for r in membership.of_task("collector")] == [
        (1, 0, False),
        (2, 1, True),
        (3, 2, True),
        (4, 3, False),
    ]
    workflow = custom.get_namespaced_custom_object("argoproj.io", "v1alpha1", namespace, "workflows", NAME)
    assert list(read_dag(workflow).live)[-1] == "collector-3"
    by_name = {t["name"]: t for t in workflow["spec"]["templates"]}
    assert by_name["collector-short"]["metadata"]["annotations"]["diengine/replicas"] == "5"
    assert set(live_pods(cluster, namespace)) == hosts
