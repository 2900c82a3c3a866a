"""spec.artifacts (docs/artifacts.md): validation, rendering, status.artifacts from the Workflow, the replica
facts that skip the collector container, and `dihera outputs`' pure parts."""

from __future__ import annotations

import dataclasses
import io
import tarfile
from pathlib import Path
from typing import Any

import pytest

from dihera.cli.outputs import argo_server_url, artifact_path, save_artifact
from dihera.constants import ANNOTATION_ARTIFACT_COLLECTOR
from dihera.controller.decide.outputs import job_artifacts
from dihera.controller.decide.replicas import exit_code, finished_ok
from dihera.model import Artifact
from dihera.render import RenderSettings, render
from dihera.validation import load_job, validate
from tests.builders import DIJobBuilder, PodBuilder, TaskBuilder, WorkflowBuilder, pod_node
from tests.unit.jobviews import JOB, Observed, running, workflow

POLICY = {"name": "policy", "path": "/work/exp/final.pth.tar"}


def job(
    *artifacts: dict[str, Any],
    main: str = "di-container",
    checkpoint: bool = False,
    namespace: str = "ns",
    uid: str | None = None,
) -> dict[str, Any]:
    """A learner (its first container mounts /work) and a collector, with ``artifacts``; ``uid``: the live
    DIJob's (the controller renders it), else none (a file)."""
    learner = TaskBuilder("learner").command("ditask").obj()
    pod = learner["template"]["spec"]
    pod["containers"][0] |= {"name": main, "volumeMounts": [{"name": "work", "mountPath": "/work"}]}
    pod["volumes"] = [{"name": "work", "emptyDir": {}}]
    built = DIJobBuilder("j").namespace(namespace).task(learner, TaskBuilder("collector").command("ditask").obj())
    if uid:
        built = built.uid(uid)
    spec: dict[str, Any] = {"artifacts": list(artifacts)} if artifacts else {}
    if checkpoint:
        spec["checkpoint"] = {}
    return built.spec(**spec).obj()


def problems(doc: dict[str, Any]) -> list[str]:
    return [str(p) for p in validate(doc)]


def test_an_artifact_defaults_to_the_learner_task() -> None:
    assert load_job(job(POLICY)).artifacts == (Artifact("policy", "/work/exp/final.pth.tar", "learner"),)


@pytest.mark.parametrize(
    ("artifact", "expected"),
    [
        ({"name": "x", "path": "/work/x", "task": "nope"}, "spec.artifacts[0].task: 'nope' is not a task of the job"),
        ({"name": "main-logs", "path": "/work/x"}, "spec.artifacts[0].name: 'main-logs' is Argo's name"),
        ({"name": "x", "path": "/opt/x"}, "spec.artifacts[0].path: '/opt/x' is not in a volume of task learner's"),
        ({"name": "x", "path": "work/x"}, "spec.artifacts[0].path: 'work/x' is not an absolute path"),
        ({"name": "-x", "path": "/work/x"}, "spec.artifacts[0].name: '-x' is not a name of letters, digits"),
    ],
)
def test_bad_artifacts_name_the_field_and_the_value(artifact: dict[str, Any], expected: str) -> None:
    found = problems(job(artifact))
    assert any(p.startswith(expected) for p in found), found


def test_a_name_used_twice_is_refused_at_both_places() -> None:
    found = problems(job(POLICY, {"name": "policy", "path": "/work/y"}))
    assert [p.split(":")[0] for p in found] == ["spec.artifacts[0].name", "spec.artifacts[1].name"], found


def test_a_path_in_the_checkpoint_volume_or_any_path_of_a_container_named_main_is_accepted() -> None:
    assert problems(job({"name": "c", "path": "/var/dihera/checkpoints/learner-0"}, checkpoint=True)) == []
    assert problems(job({"name": "x", "path": "/opt/anything"}, main="main")) == []
    assert "/work" in problems(job({"name": "x", "path": "/opt/x"}))[0]  # the mounts are named


def templates(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    wf = render(load_job(doc), settings=RenderSettings(peer_wait_image="dihera:t")).workflow
    return {t["name"]: t for t in wf["spec"]["templates"]}


def test_the_learner_template_stores_its_artifacts_through_a_main_container_after_its_first() -> None:
    learner = templates(job(POLICY))["learner"]
    key = "dihera/ns/j/{{workflow.uid}}/{{pod.name}}/policy.tgz"
    assert learner["outputs"] == {
        "artifacts": [{"name": "policy", "optional": True, "path": POLICY["path"], "s3": {"key": key}}]
    }
    first, collector = learner["containerSet"]["containers"]
    assert collector["name"] == "main" and collector["dependencies"] == [first["name"]]
    assert collector["image"] == "dihera:t" and collector["command"] == ["true"]
    assert {v["mountPath"] for v in collector["volumeMounts"]} == {v["mountPath"] for v in first["volumeMounts"]}
    assert all(v["readOnly"] for v in collector["volumeMounts"])
    assert learner["metadata"]["annotations"][ANNOTATION_ARTIFACT_COLLECTOR] == "main"


def test_tasks_without_artifacts_and_a_container_named_main_get_no_collector() -> None:
    rendered = templates(job(POLICY))
    assert "outputs" not in rendered["collector"] and len(rendered["collector"]["containerSet"]["containers"]) == 1
    assert ANNOTATION_ARTIFACT_COLLECTOR not in rendered["collector"]["metadata"]["annotations"]
    own = templates(job({"name": "x", "path": "/opt/x"}, main="main"))["learner"]
    assert [c["name"] for c in own["containerSet"]["containers"]] == ["main"] and "outputs" in own
    assert ANNOTATION_ARTIFACT_COLLECTOR not in own["metadata"]["annotations"]
    plain = templates(job())["learner"]
    assert "outputs" not in plain and len(plain["containerSet"]["containers"]) == 1


UID = "0b7a3c2e-5f1d-4e8a-9c6b-2d4f6a8b0c1e"
BEST = {"name": "best", "task": "collector", "path": "/dev/shm/best"}


def keys(doc: dict[str, Any]) -> dict[str, str]:
    """Every output artifact's key in the rendered Workflow, by ``<template>/<artifact>``."""
    return {
        f"{name}/{a['name']}": a["s3"]["key"]
        for name, t in templates(doc).items()
        for a in (t.get("outputs") or {}).get("artifacts") or []
    }


def test_every_artifact_is_stored_under_its_namespace_job_uid_and_pod_whatever_the_key_format() -> None:
    rendered = keys(job(POLICY, BEST, {"name": "exp", "path": "/work/exp"}, uid=UID))
    assert rendered == {
        "learner/policy": f"dihera/ns/j/{UID}/{{{{pod.name}}}}/policy.tgz",
        "learner/exp": f"dihera/ns/j/{UID}/{{{{pod.name}}}}/exp.tgz",
        "collector/best": f"dihera/ns/j/{UID}/{{{{pod.name}}}}/best.tgz",
    }
    # from a file (no uid yet): the Workflow's uid, which Argo substitutes (the DIJob's Workflow is never made twice)
    assert set(keys(job(POLICY)).values()) == {"dihera/ns/j/{{workflow.uid}}/{{pod.name}}/policy.tgz"}


def test_same_named_jobs_in_two_namespaces_or_one_job_made_again_render_distinct_keys() -> None:
    a, b = keys(job(POLICY, BEST, namespace="team-a", uid=UID)), keys(job(POLICY, BEST, namespace="team-b", uid=UID))
    again = keys(job(POLICY, BEST, namespace="team-a", uid=UID.replace("0b", "ff")))
    assert set(a.values()).isdisjoint(b.values()) and set(a.values()).isdisjoint(again.values())
    assert all(k.startswith(f"dihera/team-a/j/{UID}/") for k in a.values()), a
    assert keys(job(POLICY, namespace="team-a")) != keys(job(POLICY, namespace="team-b"))  # from files too


def test_a_short_hostname_template_keeps_the_artifacts_keys() -> None:
    from dihera.render.workflow import short_variant

    learner = templates(job(POLICY, uid=UID))["learner"]
    assert short_variant(learner)["outputs"] == learner["outputs"]


@pytest.mark.parametrize(
    ("path", "expected"),
    [("/tmp/out/m.pt", "p/model/m.pt"), ("/tmp/out/..", "p/model/model"), ("/", "p/model/model")],
)
def test_an_unarchived_artifacts_key_ends_with_its_file_name_and_never_climbs(path: str, expected: str) -> None:
    from dihera.artifacts import file_key

    assert file_key("p", "model", path) == expected


def stored(name: str, key: str) -> dict[str, Any]:
    return {"name": name, "s3": {"key": key}}


NODES = {
    "a": pod_node(f"{JOB}.learner-0(0)", "Failed", id="a", outputs={"artifacts": [stored("policy", "k/a.tgz")]}),
    "b": pod_node(
        f"{JOB}.learner-0(1)",
        "Succeeded",
        id="b",
        outputs={"artifacts": [stored("policy", "k/b.tgz"), stored("di-container-logs", "k/b.log")]},
    ),
    "c": pod_node(f"{JOB}.collector-0", "Succeeded", id="c", outputs={"artifacts": [stored("best", "k/c.tgz")]}),
}


def test_status_artifacts_are_each_replicas_latest_attempts_of_the_spec_artifacts() -> None:
    wf = WorkflowBuilder(JOB).nodes(NODES).obj()
    assert job_artifacts(wf, {"policy", "best"}) == [
        {"name": "best", "replica": "collector-0", "node": "c", "key": "k/c.tgz"},
        {"name": "policy", "replica": "learner-0", "node": "b", "key": "k/b.tgz"},
    ]
    assert job_artifacts(wf, set()) == [] and job_artifacts(None, {"policy"}) == []


def test_a_finished_jobs_status_gains_the_artifacts_stored_after_its_end_and_nothing_else() -> None:
    from dihera.controller.decide.hold import SuspendPlan
    from dihera.controller.decide.status import compute_status

    old = {"phase": "Succeeded", "restarts": 0}
    view = Observed(workflow("Succeeded", NODES), running()).view(old)
    assert view.job is not None
    kept = (Artifact("policy", "/w", "learner"),)
    view = dataclasses.replace(view, job=dataclasses.replace(view.job, artifacts=kept))
    update = compute_status(view, SuspendPlan(), "2026-01-01T00:05:00Z")
    assert update.changed and update.status == {**old, "artifacts": [job_artifacts(view.workflow, {"policy"})[0]]}
    again = compute_status(dataclasses.replace(view, body={**view.body, "status": update.status}), SuspendPlan(), "t")
    assert not again.changed


def test_the_collector_container_is_not_counted_as_the_users() -> None:
    pod = PodBuilder("p").terminated("wait", 0).terminated("di-container", 0).obj()
    pod["status"]["containerStatuses"].append({"name": "main", "state": {"running": {}}})
    assert not finished_ok(pod)  # without the annotation, main is the user's
    pod["metadata"].setdefault("annotations", {})[ANNOTATION_ARTIFACT_COLLECTOR] = "main"
    assert finished_ok(pod) and exit_code(pod) == 0


def test_argo_servers_address_as_argos_cli_takes_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ARGO_SERVER", raising=False)
    monkeypatch.delenv("ARGO_SECURE", raising=False)
    assert argo_server_url(None) is None
    assert argo_server_url("http://127.0.0.1:2746/") == "http://127.0.0.1:2746"
    assert argo_server_url("argo.example:2746") == "https://argo.example:2746"
    assert argo_server_url("argo.example:2746", insecure=True) == "http://argo.example:2746"
    monkeypatch.setenv("ARGO_SERVER", "a:1")
    monkeypatch.setenv("ARGO_SECURE", "false")
    assert argo_server_url(None) == "http://a:1"
    entry = {"name": "policy", "replica": "learner-0", "node": "j-1(2)"}
    assert artifact_path("ns", "j", entry) == "/artifacts/ns/j/j-1%282%29/policy"


def tgz(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return out.getvalue()


def test_a_downloaded_archive_is_unpacked_under_its_replica_and_name_and_cannot_escape(tmp_path: Path) -> None:
    entry = {"name": "policy", "replica": "learner-0", "node": "n", "key": "ns/j/p/policy.tgz"}
    assert save_artifact(tgz({"final.pth.tar": b"w"}), entry, tmp_path) == tmp_path / "learner-0" / "policy"
    assert (tmp_path / "learner-0" / "policy" / "final.pth.tar").read_bytes() == b"w"
    raw = {**entry, "key": "ns/j/p/final.pth.tar"}
    assert save_artifact(b"raw", raw, tmp_path / "r") == tmp_path / "r" / "learner-0" / "final.pth.tar"
    with pytest.raises(tarfile.OutsideDestinationError):
        save_artifact(tgz({"../../evil": b"x"}), entry, tmp_path / "e")
