"""A DIJob in the Argo UI, on the local control plane (kwok nodes): the columns and links of Argo's
ConfigMap (written by ci/devcluster from dihera.argo_ui) land on the di-server's views, and the
replicas' self-reported progress reaches the DIJob's status.

The links are followed as the Argo UI builds them (``processURL`` in ui/src/shared/components/links.tsx:
``${...}`` walked over ``{metadata, workflow, status}``; a label or annotation key keeps its dots) for
the live Workflow and each of its pods, without a token, as a browser does. The di-server runs
in-process as the chart's ServiceAccount, on the port the links name, with ``anonymous_views``.

Progress: kwok pods run no process, so no executor reports it; the test writes the learner's
WorkflowTaskResult the way Argo's executor does (workflow/executor/taskresult.go: created named after
the node, labelled with the Workflow and ``report-outputs-completed=false``, owned by the Workflow; then
merge-patched with ``progress``), and Argo's workflow-controller and dihera's controller do the rest.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from dihera.constants import LABEL_JOB, LABEL_TRIAL_POD
from dihera.kube.jobs import JobStore
from dihera.schema import GROUP, PLURAL, VERSION
from tests.integration.conftest import Poll
from tests.integration.controllers import Controller
from tests.integration.jobs import job_pods, manifest, phase_is, task
from tests.integration.lifecycle import FOREVER
from tests.integration.servers import argo_ui_config, sa_token, ui_trust

pytestmark = [pytest.mark.cluster, pytest.mark.exclusive]
ARGO = ("argoproj.io", "v1alpha1")


def _parts(expression: str) -> list[str]:
    parts = expression.split(".")
    if expression.startswith(("workflow.metadata.labels", "workflow.metadata.annotations")):
        return [*parts[:3], ".".join(parts[3:])]
    return parts


def process_url(url: str, obj: dict[str, Any]) -> str:
    """The Argo UI's substitution of ``${...}`` in a link's URL (ui/src/shared/components/links.tsx: a
    ``workflow.`` value the object lacks becomes empty, as a label a Workflow lacks)."""
    out = url
    while "${" in out:
        start = out.index("${")
        end = out.index("}", start)
        value: Any = obj
        parts = _parts(out[start + 2 : end])
        for part in parts:
            value = value.get(part) if isinstance(value, dict) else None
        if not value and parts[0] == "workflow":
            value = ""
        assert value is not None and (value or parts[0] == "workflow"), f"{url}: {out[start : end + 1]} is empty"
        out = out[:start] + str(value) + out[end + 1 :]
    return out


def link_object(workflow: dict[str, Any], pod: str | None = None) -> dict[str, Any]:
    """What the UI substitutes into a workflow link (``pod`` None) or a pod link."""
    meta = workflow["metadata"]
    return {
        "metadata": {"namespace": meta["namespace"], "name": pod or meta["name"]},
        "workflow": workflow,
        "status": {"startedAt": (workflow.get("status") or {}).get("startedAt")},
    }


def start(cluster: client.ApiClient, namespace: str, name: str, poll: Poll, **spec: Any) -> JobStore:
    jobs = JobStore(cluster)
    collectors = task("collector", **FOREVER)
    jobs.create(manifest(name, namespace, task("learner", **FOREVER), collectors, **spec))
    poll(phase_is(jobs, namespace, name, "Running"), 90, f"DIJob {name} Running")
    return jobs


def workflow(cluster: client.ApiClient, namespace: str, name: str) -> dict[str, Any]:
    wf: dict[str, Any] = client.CustomObjectsApi(cluster).get_namespaced_custom_object(
        *ARGO, namespace, "workflows", name
    )
    return wf


def follow(url: str, **headers: str) -> httpx.Response:
    """A browser following a link (and its redirects): no token."""
    return httpx.get(url, headers=headers, timeout=30, follow_redirects=True, verify=ui_trust())


def test_columns_and_links_of_a_running_dijob_land_on_the_di_server(
    controller: Controller,
    cluster: client.ApiClient,
    namespace: str,
    ui_server: str,
    poll: Poll,
) -> None:
    name = "ui"
    start(cluster, namespace, name, poll, maxReplicas=4)
    config = argo_ui_config(cluster)
    wf = workflow(cluster, namespace, name)
    assert {c["name"]: wf["metadata"]["annotations"][c["key"]] for c in config["columns"]} == {
        "Replicas": "2",
        "Tasks": "learner 1, collector 1",
        "Generation": "1",
    }
    assert wf["metadata"]["labels"][LABEL_JOB] == name
    links = {link["name"]: link for link in config["links"]}
    assert {(link["name"], link["scope"]) for link in links.values()} == {
        ("DIJob or sweep (di-server)", "workflow"), ("Replica (di-server)", "pod"), ("Trial DIJob (di-server)", "pod")
    }  # fmt: skip
    by_scope = {"workflow": links["DIJob or sweep (di-server)"], "pod": links["Replica (di-server)"]}

    # the workflow link names the Workflow and its labels; the di-server redirects to the DIJob's view
    job_url = process_url(by_scope["workflow"]["url"], link_object(wf))
    assert job_url.startswith(f"{ui_server}/ui/namespaces/{namespace}/workflows/{name}?dijob={name}&experiment=&")
    view = follow(job_url)
    assert view.status_code == 200 and view.url.path == f"/ui/namespaces/{namespace}/dijobs/{name}", view.text
    assert view.json()["job"]["name"] == name and len(view.json()["replicas"]) == 2
    page = follow(job_url, Accept="text/html")
    assert page.status_code == 200 and f"DIJob {namespace}/{name}" in page.text

    pods = {p["metadata"]["name"]: p["metadata"]["labels"]["diengine/pod"] for p in job_pods(cluster, namespace, name)}
    assert len(pods) == 2
    for pod, host in pods.items():
        resp = follow(process_url(by_scope["pod"]["url"], link_object(wf, pod)))
        assert resp.status_code == 200, resp.text
        replica = resp.json()["replica"]
        assert (f"{name}-{replica['name']}", replica["pod"], resp.json()["current"]) == (host, pod, True)

    # a sweep's trial pod (its node's pod link): the DIJob that pod created, found by the label the sweep's
    # trial template sets to Argo's {{pod.name}} (that Argo does: the real node's sweep test)
    trial_link = links["Trial DIJob (di-server)"]["url"]
    assert follow(process_url(trial_link, link_object(wf, "ui-trial-1"))).status_code == 404
    client.CustomObjectsApi(cluster).patch_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, name, {"metadata": {"labels": {LABEL_TRIAL_POD: "ui-trial-1"}}},
        _content_type="application/merge-patch+json",
    )  # fmt: skip
    resp = poll(
        lambda: (r := httpx.get(process_url(trial_link, link_object(wf, "ui-trial-1")), timeout=30,
                                follow_redirects=True, verify=ui_trust())).status_code == 200 and r,
        30, "the trial link answering 200",
    )  # fmt: skip
    assert resp.url.path == f"/ui/namespaces/{namespace}/dijobs/{name}" and resp.json()["job"]["name"] == name

    # the views are open; the API is not
    put = f"{ui_server}/v1/namespaces/{namespace}/dijobs/{name}/tasks/collector/replicas"
    assert httpx.put(put, json={"replicas": 2}, timeout=30, verify=ui_trust()).status_code == 401
    assert follow(f"{ui_server}/v1/namespaces/{namespace}/dijobs/{name}").status_code == 401

    # a scale-up: the columns follow, and the new replica's pod link lands on it
    token = sa_token(cluster, namespace, "scaler", ["get", "patch"])
    auth = {"Authorization": f"Bearer {token}"}
    scaled = httpx.put(put, json={"replicas": 2}, headers=auth, timeout=30, verify=ui_trust())
    assert scaled.status_code == 200, scaled.text

    def columns_after() -> dict[str, Any] | None:
        annotations = workflow(cluster, namespace, name)["metadata"]["annotations"]
        values = {c["name"]: annotations.get(c["key"]) for c in config["columns"]}
        return values if values["Generation"] == "2" else None

    assert poll(columns_after, 30, "the Workflow's column annotations at generation 2") == {
        "Replicas": "3",
        "Tasks": "learner 1, collector 2",
        "Generation": "2",
    }
    new_pod = poll(
        lambda: next(
            (p["metadata"]["name"] for p in job_pods(cluster, namespace, name)
             if p["metadata"]["labels"]["diengine/pod"] == f"{name}-collector-1"),
            None,
        ),
        60,
        "collector-1's pod",
    )  # fmt: skip
    wf = workflow(cluster, namespace, name)
    resp = poll(
        lambda: (r := follow(process_url(by_scope["pod"]["url"], link_object(wf, new_pod)))).status_code == 200 and r,
        30,
        "the new pod's link answering 200",
    )
    assert resp.json()["replica"]["name"] == "collector-1"


def learner_node(wf: dict[str, Any]) -> str:
    """The node ID of the learner's pod node (what its executor names its WorkflowTaskResult)."""
    prefix = f"{wf['metadata']['name']}.learner-0"
    (node_id,) = [k for k, n in wf["status"]["nodes"].items() if n["type"] == "Pod" and n["name"].startswith(prefix)]
    return node_id


def report_progress(cluster: client.ApiClient, wf: dict[str, Any], node_id: str, progress: str) -> None:
    """What Argo's executor does with the last ``N/M`` line of $ARGO_PROGRESS_FILE: upsert the node's task result."""
    custom, meta = client.CustomObjectsApi(cluster), wf["metadata"]
    result = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "WorkflowTaskResult",
        "metadata": {
            "name": node_id,
            "labels": {
                "workflows.argoproj.io/workflow": meta["name"],
                "workflows.argoproj.io/report-outputs-completed": "false",
            },
            "ownerReferences": [
                {"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow", "name": meta["name"], "uid": meta["uid"]}
            ],
        },
        "progress": progress,
    }
    try:
        custom.create_namespaced_custom_object(*ARGO, meta["namespace"], "workflowtaskresults", result)
    except ApiException as err:
        if err.status != 409:
            raise
        custom.patch_namespaced_custom_object(
            *ARGO, meta["namespace"], "workflowtaskresults", node_id, {"progress": progress},
            _content_type="application/merge-patch+json",
        )  # fmt: skip


def test_a_replicas_self_reported_progress_reaches_the_dijobs_status(
    controller: Controller,
    cluster: client.ApiClient,
    namespace: str,
    poll: Poll,
) -> None:
    name = "progress"
    jobs = start(cluster, namespace, name, poll)
    wf = workflow(cluster, namespace, name)
    node_id = learner_node(wf)
    # Argo's sum over executable nodes: the learner's pod node, the collector's (0/1), and each pod's
    # containerSet container node "main" (0/1 each): what the Argo UI's list shows
    for reported, total in (("7/10", "7/13"), ("10/10", "10/13")):
        report_progress(cluster, wf, node_id, reported)

        def followed(reported: str = reported) -> dict[str, Any] | None:
            status = (jobs.get(namespace, name) or {}).get("status") or {}
            return status if (status.get("taskProgress") or {}).get("learner") == reported else None

        status = poll(followed, 60, f"DIJob status.taskProgress.learner == {reported}")
        assert status["taskProgress"] == {"learner": reported, "collector": "0/1"}
        argo = workflow(cluster, namespace, name)["status"]
        assert argo["nodes"][node_id]["progress"] == reported
        assert status["progress"] == argo["progress"] == total

