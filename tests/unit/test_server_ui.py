"""The read-only views the Argo UI's links land on (``/ui``): JSON or HTML, and who may open them."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from dihera.argo_ui import (
    EXPERIMENT_VIEW_PATH,
    JOB_VIEW_PATH,
    POD_VIEW_PATH,
    TRIAL_VIEW_PATH,
    WORKFLOW_LINK_PATH,
    links,
)
from dihera.constants import LABEL_EXPERIMENT, LABEL_GOAL, LABEL_JOB, LABEL_METRIC, LABEL_TRIAL_POD, LABEL_TRIALS
from dihera.kube.snapshot import JobSnapshot
from dihera.server import ServerSettings, create_app
from tests.builders import PodBuilder, task
from tests.builders import job as job_doc
from tests.unit.fake_backend import ADMIN, VIEWER, FakeBackend

JOB_URL = JOB_VIEW_PATH.format(namespace="team-a", name="dqn")
HTML = {"Accept": "text/html,application/xhtml+xml"}
T1, T5 = "2026-01-01T00:00:01Z", "2026-01-01T00:00:05Z"


class PodsBackend(FakeBackend):
    """The API tests' backend, with pods: collector-0 retried (pod c0-a failed, c0-b runs), a retired pod."""

    PODS = (
        PodBuilder("dqn-learner-0-x").job("dqn").host("dqn-learner-0").created(T1).phase("Running").obj(),
        PodBuilder("dqn-collector-0-a").job("dqn").host("dqn-collector-0").created(T1).phase("Failed").obj(),
        PodBuilder("dqn-collector-0-b").job("dqn").host("dqn-collector-0").created(T5).phase("Running").obj(),
        PodBuilder("dqn-collector-7-z").job("dqn").host("dqn-collector-7").created(T1).phase("Succeeded").obj(),
    )

    def job(self, namespace: str, name: str) -> JobSnapshot | None:
        entry = self.jobs.get((namespace, name))
        return JobSnapshot(entry["body"], entry["configmap"], self.PODS) if entry else None


@pytest.fixture
def backend() -> PodsBackend:
    b = PodsBackend()
    b.add(job_doc(task("learner"), task("collector", replicas=2), name="dqn"))
    status = b.jobs[("team-a", "dqn")]["body"]["status"]
    status.update(progress="40/2003", taskProgress={"learner": "40/2000", "collector": "0/2"})
    return b


def client(backend: PodsBackend, token: str | None = None, anonymous_views: bool = False) -> TestClient:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return TestClient(create_app(ServerSettings(anonymous_views=anonymous_views), backend), headers=headers)


def test_job_view_json(backend: PodsBackend) -> None:
    body = client(backend, VIEWER).get(JOB_URL).json()
    assert body["job"]["name"] == "dqn" and body["job"]["membershipGeneration"] == 1
    assert (body["progress"], body["taskProgress"]) == ("40/2003", {"learner": "40/2000", "collector": "0/2"})
    assert [(r["name"], r["pod"], r["phase"]) for r in body["replicas"]] == [
        ("learner-0", "dqn-learner-0-x", "Running"),
        ("collector-0", "dqn-collector-0-b", "Running"),
        ("collector-1", None, None),
    ]


def test_pod_view_names_the_replica_and_whether_the_pod_is_its_current_attempt(backend: PodsBackend) -> None:
    http = client(backend, VIEWER)

    def view(name: str) -> dict[str, Any]:
        resp = http.get(POD_VIEW_PATH.format(namespace="team-a", name="dqn", pod=name))
        assert resp.status_code == 200, resp.text
        return dict(resp.json())

    current = view("dqn-collector-0-b")
    assert (current["replica"]["name"], current["current"], current["podPhase"]) == ("collector-0", True, "Running")
    earlier = view("dqn-collector-0-a")
    assert (earlier["replica"]["name"], earlier["current"], earlier["podPhase"]) == ("collector-0", False, "Failed")
    retired = view("dqn-collector-7-z")
    assert (retired["replica"], retired["current"]) == (None, False)
    missing = http.get(POD_VIEW_PATH.format(namespace="team-a", name="dqn", pod="nope"))
    assert missing.status_code == 404 and "nope is not a pod of DIJob team-a/dqn" in missing.text


def test_a_browser_gets_html_with_every_value_escaped(backend: PodsBackend) -> None:
    backend.jobs[("team-a", "dqn")]["body"]["status"]["taskProgress"] = {"learner": "<b>1/2</b>"}
    resp = client(backend, VIEWER).get(JOB_URL, headers=HTML)
    assert resp.headers["content-type"].startswith("text/html")
    page = resp.text
    assert "<h1>DIJob team-a/dqn</h1>" in page and "dqn-collector-0-b" in page and "40/2003" in page
    assert "&lt;b&gt;1/2&lt;/b&gt;" in page and "<b>1/2</b>" not in page
    pod_page = client(backend, VIEWER).get(
        POD_VIEW_PATH.format(namespace="team-a", name="dqn", pod="dqn-learner-0-x"), headers=HTML
    )
    assert "<h1>Pod dqn-learner-0-x</h1>" in pod_page.text and "learner-0" in pod_page.text


def test_views_need_a_token_unless_anonymous_views_and_writes_always_do(backend: PodsBackend) -> None:
    assert client(backend).get(JOB_URL).status_code == 401
    open_views = client(backend, anonymous_views=True)
    assert open_views.get(JOB_URL).status_code == 200
    assert (
        open_views.get(POD_VIEW_PATH.format(namespace="team-a", name="dqn", pod="dqn-learner-0-x")).status_code == 200
    )
    # the API's reads and writes keep their checks
    assert open_views.get("/v1/namespaces/team-a/dijobs/dqn").status_code == 401
    assert (
        open_views.put("/v1/namespaces/team-a/dijobs/dqn/tasks/collector/replicas", json={"replicas": 3}).status_code
        == 401
    )
    assert open_views.post("/v2alpha1/job/team-a.dqn/replicas", json={"replicas": 1}).status_code == 401
    # a token that is sent is still checked
    bad = client(backend, "not-a-token", anonymous_views=True)
    assert bad.get(JOB_URL).status_code == 401
    assert backend.scale_calls == 0


def test_the_argo_links_land_on_these_views(backend: PodsBackend) -> None:
    """Each link's URL, with Argo's substitutions done for this job's Workflow and pod, answers 200 (the
    trial link: for a pod that created a DIJob, as a sweep's trial pod does)."""
    backend.jobs[("team-a", "dqn")]["body"]["metadata"]["labels"] = {LABEL_TRIAL_POD: "dqn-learner-0-x"}
    http = client(backend, ADMIN)
    values = {
        "${metadata.namespace}": "team-a",
        f"${{workflow.metadata.labels.{LABEL_JOB}}}": "dqn",
    }
    for label in (LABEL_EXPERIMENT, LABEL_METRIC, LABEL_GOAL, LABEL_TRIALS):
        values[f"${{workflow.metadata.labels.{label}}}"] = ""  # what Argo puts for a label a Workflow lacks
    for link in links("http://testserver"):
        url = link["url"]
        for key, value in {
            **values,
            "${metadata.name}": "dqn" if link["scope"] == "workflow" else "dqn-learner-0-x",
        }.items():
            url = url.replace(key, value)
        assert "${" not in url
        assert http.get(url).status_code == 200, (link, url)
        assert http.get(url).url.path.startswith(JOB_VIEW_PATH.format(namespace="team-a", name="dqn")), url


def test_the_job_view_shows_the_last_checkpoint_the_job_reported(backend: PodsBackend) -> None:
    http = client(backend, VIEWER)
    assert http.get(JOB_URL).json()["checkpoint"] is None
    assert "last checkpoint</td><td>-</td>" in http.get(JOB_URL, headers=HTML).text
    reported = {"iteration": 270, "path": "/var/dihera/checkpoints/learner-0/iteration_270.pth.tar",
                "replica": "learner-0", "time": "2026-11-28T10:00:00Z", "onTerm": True}  # fmt: skip
    backend.jobs[("team-a", "dqn")]["body"]["status"]["profilings"] = {"checkpoint": reported, "evalReturn": 9}
    assert http.get(JOB_URL).json()["checkpoint"] == reported
    page = http.get(JOB_URL, headers=HTML).text
    expected = (
        "last checkpoint</td><td>iteration 270 by learner-0 on SIGTERM at 2026-11-28T10:00:00Z: "
        "/var/dihera/checkpoints/learner-0/iteration_270.pth.tar</td>"
    )
    assert expected in page, page
    backend.jobs[("team-a", "dqn")]["body"]["status"]["profilings"] = {"checkpoint": "not an object"}
    assert http.get(JOB_URL).json()["checkpoint"] is None


def sweep_backend(backend: PodsBackend) -> PodsBackend:
    """Three trials of sweep `lr` created (of four): lr 0.01 seeds 0 (Succeeded, 99) and 1 (running, 90),
    lr 0.5 seed 0 stopped (3); and a DIJob of another sweep."""
    rows = [(0, 0.01, 0, "Succeeded", 99, {}), (1, 0.01, 1, "Running", 90, {}),
            (2, 0.5, 0, "Suspended", 3, {"diengine/stopped": "median stopping rule at iteration 4"})]  # fmt: skip
    for i, lr, seed, phase, ret, extra in rows:
        backend.add(job_doc(task("learner"), name=f"lr-t0{i}"))
        body = backend.jobs[("team-a", f"lr-t0{i}")]["body"]
        body["metadata"]["labels"] = {LABEL_EXPERIMENT: "lr", "diengine/trial": str(i)}
        body["metadata"]["annotations"] = {
            "diengine/param.lr": repr(lr), "diengine/seed": str(seed), "diengine/configuration": str(i // 2), **extra
        }  # fmt: skip
        body["status"].update(phase=phase, profilings={"evalReturn": ret})
    backend.add(job_doc(task("learner"), name="other-t00"))
    backend.jobs[("team-a", "other-t00")]["body"]["metadata"]["labels"] = {LABEL_EXPERIMENT: "other"}
    return backend


def test_a_sweeps_view_lists_its_trials_counts_them_and_names_the_best_so_far(backend: PodsBackend) -> None:
    http = client(sweep_backend(backend), ADMIN)
    url = EXPERIMENT_VIEW_PATH.format(namespace="team-a", name="lr") + "?metric=evalReturn&goal=maximize&trials=4"
    body = http.get(url).json()
    assert [(r["job"], r["phase"], r["metric"]) for r in body["rows"]] == [
        ("lr-t00", "Succeeded", 99.0), ("lr-t01", "Running", 90.0), ("lr-t02", "Stopped", 3.0)
    ]  # fmt: skip
    assert body["counts"] == {"done": 1, "running": 1, "failed": 0, "stopped": 1} and body["trials"] == 4
    assert body["best"]["values"] == {"lr": 0.01} and body["best"]["mean"] == 94.5, body["best"]
    minimize = http.get(url.replace("maximize", "minimize")).json()
    assert minimize["best"]["values"] == {"lr": 0.5}
    page = http.get(url, headers=HTML).text
    assert "<h1>Sweep team-a/lr</h1>" in page and "1 done, 1 running, 0 failed, 1 stopped, 1 waiting of 4" in page
    assert '<a href="../dijobs/lr-t02">lr-t02</a>' in page and "<td>Stopped</td>" in page
    # each trial's link, resolved as a browser does, is its DIJob's view
    followed = http.get(http.get(url).url.join("../dijobs/lr-t02"))
    assert followed.json()["job"]["name"] == "lr-t02"


def test_a_sweeps_view_asks_for_list_and_refuses_bad_queries_naming_them(backend: PodsBackend) -> None:
    sweep_backend(backend)
    url = EXPERIMENT_VIEW_PATH.format(namespace="team-a", name="lr")
    denied = client(backend, VIEWER).get(url)
    assert denied.status_code == 403 and "viewer may not list dijobs" in denied.text
    assert client(backend).get(url).status_code == 401
    assert client(backend, anonymous_views=True).get(url).json()["metric"] == "evalReturn", "defaults"
    http = client(backend, ADMIN)
    for query, message in (("metric=a-b", "query metric='a-b'"), ("goal=up", "query goal='up'"),
                           ("trials=x", "query trials='x'")):  # fmt: skip
        resp = http.get(f"{url}?{query}")
        assert resp.status_code == 400 and message in resp.text, (query, resp.text)
    missing = http.get(EXPERIMENT_VIEW_PATH.format(namespace="team-a", name="nope"))
    assert missing.status_code == 404 and "diengine/experiment=nope" in missing.text


def test_the_workflow_link_redirects_by_the_workflows_labels(backend: PodsBackend) -> None:
    sweep_backend(backend)
    http = client(backend, ADMIN)
    base = WORKFLOW_LINK_PATH.format(namespace="team-a", name="wf")
    sweep = http.get(f"{base}?dijob=&experiment=lr&metric=evalReturn&goal=minimize&trials=4", follow_redirects=False)
    assert (sweep.status_code, sweep.headers["location"]) == (
        307, "../experiments/lr?metric=evalReturn&goal=minimize&trials=4"
    )  # fmt: skip
    assert http.get(f"{base}?experiment=lr&goal=minimize").json()["best"]["values"] == {"lr": 0.5}
    job = http.get(f"{base}?dijob=dqn&experiment=lr", follow_redirects=False)
    assert job.headers["location"] == "../dijobs/dqn", "a trial's own Workflow: its DIJob"
    neither = http.get(f"{base}?dijob=&experiment=")
    assert neither.status_code == 404 and "Workflow team-a/wf is neither a DIJob's" in neither.text
    for query in ("dijob=..%2Fx", "experiment=http:%2F%2Fevil", "experiment=lr&goal=up"):
        assert http.get(f"{base}?{query}", follow_redirects=False).status_code == 400, query


def test_a_trial_pods_link_redirects_to_the_dijob_it_created(backend: PodsBackend) -> None:
    """A sweep's trial node runs a pod that creates the trial's DIJob, labelled with the pod's name."""
    backend.add(job_doc(task("learner"), name="sweep-t03"))
    backend.jobs[("team-a", "sweep-t03")]["body"]["metadata"]["labels"] = {LABEL_TRIAL_POD: "sweep-trial-123"}
    trial_url = TRIAL_VIEW_PATH.format(namespace="team-a", pod="sweep-trial-123")
    http = client(backend, VIEWER)
    resp = http.get(trial_url, follow_redirects=False)
    assert (resp.status_code, resp.headers["location"]) == (307, "../dijobs/sweep-t03")
    followed = http.get(trial_url)
    assert followed.url.path == JOB_VIEW_PATH.format(namespace="team-a", name="sweep-t03")
    assert followed.json()["job"]["name"] == "sweep-t03"
    other = http.get(TRIAL_VIEW_PATH.format(namespace="team-a", pod="dqn-learner-0-x"))
    assert other.status_code == 404 and "pod team-a/dqn-learner-0-x created no DIJob" in other.text
    assert "diengine/trial-pod=dqn-learner-0-x" in other.text


def test_a_trial_link_tells_an_unknown_caller_nothing(backend: PodsBackend) -> None:
    """The token is checked before the DIJob is looked up; anonymous views follow the redirect."""
    backend.jobs[("team-a", "dqn")]["body"]["metadata"]["labels"] = {LABEL_TRIAL_POD: "p1"}
    for pod in ("p1", "unknown"):
        url = TRIAL_VIEW_PATH.format(namespace="team-a", pod=pod)
        assert client(backend).get(url).status_code == 401
        assert client(backend, "not-a-token").get(url).status_code == 401
    open_views = client(backend, anonymous_views=True)
    assert open_views.get(TRIAL_VIEW_PATH.format(namespace="team-a", pod="p1")).json()["job"]["name"] == "dqn"
