"""The learning curve as SVG (dihera/rl/curve.py), and where the di-server serves it: the job view draws it
inline, ``/ui/namespaces/<ns>/dijobs/<job>/curve.svg`` answers it alone."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from fastapi.testclient import TestClient

from dihera.argo_ui import JOB_VIEW_PATH
from dihera.rl.curve import learning_curve_svg
from dihera.server import ServerSettings, create_app
from tests.unit.fake_backend import VIEWER, FakeBackend

SVG = "{http://www.w3.org/2000/svg}"
TRAINING = {
    "iteration": 300,
    "envStepsPerSecond": 410.5,
    "evaluation": {"value": 120.0, "best": 150.0, "iteration": 300},
    "curve": [
        {"iteration": 0, "value": 9.5, "envStepsPerSecond": 200.0},
        {"iteration": 100, "envStepsPerSecond": 380.0},
        {"iteration": 200, "value": 150.0, "envStepsPerSecond": 400.0},
        {"iteration": 300, "value": 120.0, "envStepsPerSecond": 410.5},
        {"iteration": 310, "value": float("nan")},  # never written by the merge; drawn without it anyway
    ],
}


def test_return_and_env_steps_per_second_are_two_lines_over_iterations() -> None:
    svg = learning_curve_svg(TRAINING, "team-a/dqn")
    root = ET.fromstring(svg)
    lines = {p.get("data-series"): p for p in root.iter(f"{SVG}polyline")}
    assert set(lines) == {"return", "env steps/s"}
    assert lines["return"].get("data-points") == "3" and lines["env steps/s"].get("data-points") == "4"
    title = "".join(root.find(f"{SVG}text").itertext())  # type: ignore[union-attr]
    assert title == "DIJob team-a/dqn, return 120 (best 150), iteration 300, 410.5 env steps/s"
    assert svg == learning_curve_svg(TRAINING, "team-a/dqn")  # deterministic


def test_nothing_reported_says_so() -> None:
    root = ET.fromstring(learning_curve_svg(None, "team-a/dqn"))
    assert not list(root.iter(f"{SVG}polyline"))
    assert "No figures reported yet" in "".join(root.itertext())


def test_the_di_server_serves_it_and_the_job_view_draws_it(backend: FakeBackend) -> None:
    backend.jobs[("team-a", "dqn")]["body"]["status"]["training"] = TRAINING
    http = TestClient(create_app(ServerSettings(), backend), headers={"Authorization": f"Bearer {VIEWER}"})
    job_url = JOB_VIEW_PATH.format(namespace="team-a", name="dqn")
    svg = http.get(job_url + "/curve.svg")
    assert svg.status_code == 200 and svg.headers["content-type"] == "image/svg+xml"
    assert ET.fromstring(svg.text).tag == f"{SVG}svg"
    page = http.get(job_url, headers={"Accept": "text/html"}).text
    assert "<h2>Training</h2>" in page and 'data-series="return"' in page and 'href="dqn/curve.svg"' in page
    assert http.get(job_url).json()["training"]["iteration"] == 300
    assert http.get(JOB_VIEW_PATH.format(namespace="team-a", name="nope") + "/curve.svg").status_code == 404
    anonymous = TestClient(create_app(ServerSettings(), backend))
    assert anonymous.get(job_url + "/curve.svg").status_code == 401
