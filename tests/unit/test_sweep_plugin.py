"""Podless trials (dihera.sweeps.plugin): the agent's requests, the slots, the replies, the rendered template."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

from dihera import experiment as ex
from dihera.cli.trial_plugin import create_app, summary_reply
from dihera.sweeps import Runner, SweepSpaceError
from dihera.sweeps.plugin import (
    PLUGIN_NAME,
    PluginRequestError,
    SummaryRequest,
    TrialRefused,
    TrialRequest,
    Trials,
    plugin_manifests,
)
from dihera.sweeps.workflow import SUMMARY, TRIAL, TRIALS

UID = "wf-uid-1"


def _job(name: str = "bench") -> Any:
    return ex.dijob(name, [ex.task("collector", image="ding", command=["ditask"])], namespace="ns")


def _sweep(runner: str = "plugin", trials: int = 5, parallelism: int = 2) -> Any:
    return ex.sweep(
        "sw", _job(), {"lr": ex.loguniform(1e-4, 1e-1)}, search=ex.random_search(trials, seed=0),
        parallelism=parallelism, image="dihera:test", runner=runner,
    )  # fmt: skip


def _body(index: int, parallelism: int = 2, uid: str = UID, metric: str = "evalReturn") -> dict[str, Any]:
    manifest = {"apiVersion": "diengine.opendilab.org/v2alpha1", "kind": "DIJob", "metadata": {"name": f"sw-t{index}"}}
    manifest["metadata"]["labels"] = {"diengine/experiment": "sw"}
    spec = {"manifest": manifest, "parallelism": parallelism, "metric": metric, "index": str(index)}
    return {
        "workflow": {"metadata": {"name": "sw", "namespace": "ns", "uid": uid}},
        "template": {"name": "trial", "plugin": {PLUGIN_NAME: spec}},
    }


def _request(index: int, parallelism: int = 2) -> TrialRequest:
    request = TrialRequest.parse(_body(index, parallelism))
    assert request is not None
    return request


class Cluster:
    """What the watch would report: the DIJobs created through ``create``."""

    def __init__(self) -> None:
        self.created: list[str] = []
        self.jobs: dict[str, dict[str, Any]] = {}
        self.fail: Exception | None = None

    def create(self, manifest: dict[str, Any]) -> None:
        if self.fail is not None:
            raise self.fail
        self.created.append(manifest["metadata"]["name"])
        self.jobs[manifest["metadata"]["name"]] = manifest


def _ended(trials: Trials, cluster: Cluster, name: str, phase: str, **status: Any) -> None:
    job = {**cluster.jobs[name], "status": {"phase": phase, **status}}
    trials.seen(job)


def test_a_request_for_another_plugin_is_not_this_plugins() -> None:
    assert TrialRequest.parse({"template": {"plugin": {"slack": {}}}}) is None


def test_the_request_names_the_workflow_as_the_trials_owner() -> None:
    request = _request(3)
    meta = request.manifest["metadata"]
    assert (request.namespace, request.workflow, request.index, request.job) == ("ns", "sw", 3, "sw-t3")
    assert meta["namespace"] == "ns"
    (owner,) = meta["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == ("Workflow", "sw", UID, True)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda b: b["workflow"]["metadata"].pop("uid"), "workflow.metadata.uid"),
        (lambda b: b["template"]["plugin"][PLUGIN_NAME].pop("manifest"), f"template.plugin.{PLUGIN_NAME}.manifest"),
        (lambda b: b["template"]["plugin"][PLUGIN_NAME].update(parallelism="x"), "parallelism and index"),
        (lambda b: b["template"]["plugin"][PLUGIN_NAME].update(parallelism=0), "parallelism 0 must be >= 1"),
    ],
)
def test_a_bad_request_is_refused_naming_the_field(change: Any, field: str) -> None:
    body = _body(0)
    change(body)
    with pytest.raises(PluginRequestError, match=field.replace(".", r"\.")):
        TrialRequest.parse(body)


def test_nothing_is_created_before_the_watch_has_listed_the_sweeps_jobs() -> None:
    cluster = Cluster()
    trials = Trials(cluster.create)
    reply = trials.execute(_request(0))
    assert reply["node"]["phase"] == "Pending" and cluster.created == []
    assert "watch of the sweep's DIJobs" in reply["node"]["message"]  # what a plugin without RBAC would show
    trials.synced()
    assert cluster.created == ["sw-t0"]
    assert trials.execute(_request(0))["node"]["phase"] == "Running"


def test_at_most_parallelism_trials_live_and_the_next_starts_when_one_ends() -> None:
    cluster = Cluster()
    trials = Trials(cluster.create)
    trials.synced()
    replies = [trials.execute(_request(i)) for i in (3, 0, 1, 2)]
    assert [r["node"]["phase"] for r in replies] == ["Running", "Running", "Pending", "Pending"]
    assert replies[2]["requeue"] and "one of the 2 slots" in replies[2]["node"]["message"]
    assert cluster.created == ["sw-t3", "sw-t0"] and trials.live() == 2
    for name in ("sw-t3", "sw-t0"):
        trials.seen(cluster.jobs[name])  # the watch sees them running: still two
    assert cluster.created == ["sw-t3", "sw-t0"]
    _ended(trials, cluster, "sw-t0", "Succeeded")  # the lowest waiting index starts at once, not on a requeue
    assert cluster.created == ["sw-t3", "sw-t0", "sw-t1"] and trials.live() == 2
    _ended(trials, cluster, "sw-t3", "Suspended")  # stopped early: its slot is free too
    assert cluster.created[-1] == "sw-t2"


def test_an_ended_trial_reports_its_phase_and_metric() -> None:
    cluster = Cluster()
    trials = Trials(cluster.create)
    trials.synced()
    trials.execute(_request(0))
    trials.execute(_request(1))
    _ended(trials, cluster, "sw-t0", "Succeeded", profilings={"evalReturn": 195.5})
    _ended(trials, cluster, "sw-t1", "Suspended", message="stopped early: below the median")
    done, stopped = trials.execute(_request(0)), trials.execute(_request(1))
    assert done["node"]["phase"] == "Succeeded" and "requeue" not in done
    assert done["node"]["outputs"]["parameters"] == [
        {"name": "phase", "value": "Succeeded"},
        {"name": "evalReturn", "value": "195.5"},
    ]
    assert stopped["node"]["phase"] == "Failed" and "below the median" in stopped["node"]["message"]
    assert {"name": "phase", "value": "Suspended"} in stopped["node"]["outputs"]["parameters"]


def test_a_refused_dijob_fails_its_node_and_an_outage_is_tried_again() -> None:
    cluster = Cluster()
    trials = Trials(cluster.create)
    trials.synced()
    cluster.fail = TrialRefused("the API server refused DIJob sw-t0: 422 spec.tasks[0].replicas")
    refused = trials.execute(_request(0))
    assert refused["node"]["phase"] == "Failed" and "spec.tasks[0].replicas" in refused["node"]["message"]
    cluster.fail = ConnectionError("connection refused")
    waiting = trials.execute(_request(1))
    assert waiting["node"]["phase"] == "Pending" and "trying again" in waiting["node"]["message"]
    cluster.fail = None
    assert trials.execute(_request(1))["node"]["phase"] == "Running" and cluster.created == ["sw-t1"]


def test_a_restarted_plugin_counts_the_running_trials_it_did_not_create() -> None:
    cluster = Cluster()
    trials = Trials(cluster.create)
    running = [_request(i).manifest for i in (0, 1)]
    for manifest in running:
        trials.seen(manifest)  # the watch's first listing
    trials.synced()
    assert trials.execute(_request(0))["node"]["phase"] == "Running"
    assert trials.execute(_request(2))["node"]["phase"] == "Pending" and cluster.created == []


def test_a_namesakes_dijob_is_not_the_trials() -> None:
    cluster = Cluster()
    trials = Trials(cluster.create)
    other = TrialRequest.parse(_body(0, uid="an-earlier-workflow"))
    assert other is not None
    trials.seen({**other.manifest, "status": {"phase": "Succeeded"}})
    trials.synced()
    assert trials.execute(_request(1))["node"]["phase"] == "Running"
    assert trials.execute(_request(0))["node"]["phase"] == "Running"  # its own, created (409 is fine)
    assert cluster.created == ["sw-t1", "sw-t0"]


def test_a_trial_deleted_before_it_ended_fails_and_frees_its_slot() -> None:
    cluster = Cluster()
    trials = Trials(cluster.create)
    trials.synced()
    trials.execute(_request(0, parallelism=1))
    trials.execute(_request(1, parallelism=1))
    trials.seen(cluster.jobs["sw-t0"])
    trials.gone(cluster.jobs["sw-t0"])
    assert cluster.created == ["sw-t0", "sw-t1"]
    assert trials.execute(_request(0, parallelism=1))["node"]["phase"] == "Failed"


def test_the_app_wants_the_agents_token_and_answers_only_its_templates() -> None:
    cluster = Cluster()
    trials = Trials(cluster.create)
    trials.synced()
    started: list[str] = []
    app = TestClient(create_app(trials, lambda ns, experiment: started.append(experiment), "secret"))
    url = "/api/v1/template.execute"
    assert app.post(url, json=_body(0)).status_code == 403
    assert app.post(url, json=_body(0), headers={"Authorization": "Bearer wrong"}).status_code == 403
    auth = {"Authorization": "Bearer secret"}
    assert app.post(url, json={"template": {"plugin": {"other": {}}}}, headers=auth).json() == {}
    reply = app.post(url, json=_body(0), headers=auth).json()
    assert reply["node"]["phase"] == "Running" and started == ["sw"]
    bad = _body(1)
    bad["template"]["plugin"][PLUGIN_NAME]["parallelism"] = -1
    assert app.post(url, json=bad, headers=auth).json()["node"]["phase"] == "Failed"


def test_a_plugin_sweep_renders_plugin_trial_nodes_without_a_pod_parallelism() -> None:
    templates = {t["name"]: t for t in ex.sweep_workflow(_sweep()).to_dict()["spec"]["templates"]}
    body = templates[TRIAL]["plugin"][PLUGIN_NAME]
    assert "resource" not in templates[TRIAL] and "parallelism" not in templates[TRIALS]
    assert (body["parallelism"], body["metric"], body["index"]) == (2, "evalReturn", "{{inputs.parameters.trial}}")
    meta = body["manifest"]["metadata"]
    assert meta["name"] == "{{inputs.parameters.job}}" and "diengine/trial-pod" not in meta["labels"]
    resource = {t["name"]: t for t in ex.sweep_workflow(_sweep("resource")).to_dict()["spec"]["templates"]}
    assert "plugin" not in resource[TRIAL] and resource[TRIALS]["parallelism"] == 2


def test_an_unknown_runner_is_refused_naming_the_field() -> None:
    with pytest.raises(SweepSpaceError, match="runner: 'pods'"):
        _sweep("pods")
    assert _sweep().runner is Runner.PLUGIN


def test_the_plugin_manifests_give_the_sidecar_and_the_agents_rights() -> None:
    docs = plugin_manifests("ns", "dihera:test", sweep_account="sweeper")
    kinds = [(d["kind"], d["metadata"]["name"]) for d in docs]
    assert ("ConfigMap", f"{PLUGIN_NAME}-executor-plugin") in kinds
    assert ("Secret", "sweeper.service-account-token") in kinds
    assert ("RoleBinding", "sweeper-argo-agent") in kinds
    (config,) = [d for d in docs if d["kind"] == "ConfigMap"]
    assert config["metadata"]["labels"]["workflows.argoproj.io/configmap-type"] == "ExecutorPlugin"
    assert "image: dihera:test" in config["data"]["sidecar.container"]


def _summary_body(**summary: Any) -> dict[str, Any]:
    body = _body(0)
    body["template"] = {"name": "summary", "plugin": {PLUGIN_NAME: {"summary": summary}}}
    return body


def test_the_summary_request_is_told_apart_and_checked() -> None:
    body = _summary_body(experiment="sw", metric="evalReturn", goal="maximize")
    assert TrialRequest.parse(body) is None
    assert SummaryRequest.parse(body) == SummaryRequest("ns", UID, "sw", "evalReturn", "maximize")
    assert SummaryRequest.parse(_body(0)) is None
    with pytest.raises(PluginRequestError, match=rf"template\.plugin\.{PLUGIN_NAME}\.summary\.goal"):
        SummaryRequest.parse(_summary_body(experiment="sw", metric="evalReturn"))


def _trial_job(index: int, lr: float, seed: int, value: float | None, uid: str = UID) -> dict[str, Any]:
    annotations = {"diengine/param.lr": repr(lr), "diengine/seed": str(seed), "diengine/configuration": str(index // 2)}
    meta = {"name": f"sw-t{index}", "labels": {"diengine/trial": str(index)}, "annotations": annotations}
    meta["ownerReferences"] = [{"uid": uid}]
    status: dict[str, Any] = {"phase": "Succeeded"}
    if value is not None:
        status["profilings"] = {"evalReturn": value}
    return {"metadata": meta, "status": status}


def test_the_podless_summary_outputs_the_table_and_the_best_of_the_workflows_trials() -> None:
    request = SummaryRequest("ns", UID, "sw", "evalReturn", "maximize")
    assert summary_reply(None, request)["node"]["phase"] == "Pending"
    assert summary_reply([], request)["node"]["phase"] == "Failed"
    cluster = Cluster()
    trials = Trials(cluster.create)
    jobs = [_trial_job(0, 0.001, 0, 190.0), _trial_job(1, 0.001, 1, 200.0), _trial_job(2, 0.5, 0, 20.0)]
    for job in [*jobs, _trial_job(3, 0.7, 0, 500.0, uid="an-earlier-workflow")]:
        trials.seen(job)
    trials.synced()
    reply = summary_reply(trials.owned(UID), request)
    outputs = {p["name"]: p["value"] for p in reply["node"]["outputs"]["parameters"]}
    assert reply["node"]["phase"] == "Succeeded"
    best = json.loads(outputs["best"])
    assert best["values"] == {"lr": 0.001} and best["evalReturn"] == 195.0 and best["seeds"] == 2
    assert outputs["results-csv"].count("\n") == 4 and "500" not in outputs["results-csv"]  # a header, 3 trials
    assert "0.001" in outputs["results"] and "sw-t3" not in outputs["results"]


def test_a_plugin_sweep_without_artifacts_summarizes_without_a_pod() -> None:
    templates = {t["name"]: t for t in ex.sweep_workflow(_sweep()).to_dict()["spec"]["templates"]}
    assert templates[SUMMARY]["plugin"][PLUGIN_NAME]["summary"] == {
        "experiment": "sw", "metric": "evalReturn", "goal": "maximize",
    }  # fmt: skip
    with_files = ex.sweep(
        "sw", _job(), {"lr": ex.choice(0.1)}, image="dihera:test", runner="plugin", artifacts=True
    )  # fmt: skip
    summary = {t["name"]: t for t in ex.sweep_workflow(with_files).to_dict()["spec"]["templates"]}[SUMMARY]
    assert "container" in summary and "plugin" not in summary
