"""``spec.checkpoint`` (docs/checkpoints.md): defaults, validation naming the field, and what is rendered — the claim
(owned by the DIJob unless Retain), made before the Workflow, and in the mounting tasks' pods only the volume, the
mount in every container and user init container, and ``DI_CHECKPOINT_DIR`` per replica."""

from __future__ import annotations

from typing import Any

import pytest

from dihera import load_job
from dihera.model import Checkpoint, ReclaimPolicy
from dihera.render import render
from dihera.validation import validate
from tests.builders import job, task
from tests.rendered import container_env, replica_template

MOUNT = "/var/dihera/checkpoints"


def _job(checkpoint: dict[str, Any] | None, *tasks: dict[str, Any], uid: str | None = "u-1") -> dict[str, Any]:
    doc = job(*(tasks or (task("learner"), task("collector", replicas=2))), name="j", checkpoint=checkpoint)
    if checkpoint is None:
        del doc["spec"]["checkpoint"]
    if uid:
        doc["metadata"]["uid"] = uid
    return doc


def test_defaults_mount_the_learner_and_survive_a_round_trip() -> None:
    loaded = load_job(_job({}))
    assert loaded.checkpoint == Checkpoint(tasks=("learner",))
    assert loaded.checkpoint.size == "1Gi" and loaded.checkpoint.mount_path == MOUNT
    assert loaded.checkpoint.reclaim_policy is ReclaimPolicy.DELETE
    assert load_job(loaded.to_manifest()).checkpoint == loaded.checkpoint


def test_without_a_learner_every_task_mounts_it() -> None:
    loaded = load_job(_job({}, task("none", name="a"), task("none", name="b")))
    assert loaded.checkpoint is not None and loaded.checkpoint.tasks == ("a", "b")


@pytest.mark.parametrize(
    ("checkpoint", "tasks", "field", "words"),
    [
        ({"tasks": ["lerner"]}, (), "spec.checkpoint.tasks[0]", "'lerner' is not a task of the job; valid: learner"),
        ({"size": "0Mi"}, (), "spec.checkpoint.size", "'0Mi' is not above zero"),
        ({"size": "ten"}, (), "spec.checkpoint.size", "ten"),
        ({"mountPath": "rel"}, (), "spec.checkpoint.mountPath", "rel"),
        ({"accessMode": "ReadOnlyMany"}, (), "spec.checkpoint.accessMode", "ReadOnlyMany"),
        ({"reclaimPolicy": "Recycle"}, (), "spec.checkpoint.reclaimPolicy", "Recycle"),
        ({"size": "1Gi", "extra": 1}, (), "spec.checkpoint.extra", "unknown field"),
        (
            {},
            (task("learner", volumes=[{"name": "dihera-checkpoints", "emptyDir": {}}]),),
            "spec.tasks[0].template.spec.volumes[0].name",
            "the checkpoint volume's name",
        ),
        (
            {"mountPath": "/ckpt"},
            (
                task(
                    "learner",
                    containers=[{"name": "main", "image": "x", "volumeMounts": [{"name": "w", "mountPath": "/ckpt"}]}],
                    volumes=[{"name": "w", "emptyDir": {}}],
                ),
            ),
            "spec.tasks[0].template.spec.containers[0].volumeMounts[0].mountPath",
            "'/ckpt' is spec.checkpoint.mountPath",
        ),
    ],
)
def test_bad_values_are_refused_naming_the_field(
    checkpoint: dict[str, Any], tasks: tuple[dict[str, Any], ...], field: str, words: str
) -> None:
    problems = validate(_job(checkpoint, *tasks))
    assert any(p.path == field and words in p.message for p in problems), problems


def test_a_mount_path_taken_in_a_task_that_does_not_mount_it_is_fine() -> None:
    taken = task(
        "collector",
        containers=[{"name": "main", "image": "x", "volumeMounts": [{"name": "w", "mountPath": MOUNT}]}],
        volumes=[{"name": "w", "emptyDir": {}}],
    )
    assert validate(_job({}, task("learner"), taken)) == []


def _template(rendered: Any, dag_task: str) -> dict[str, Any]:
    return replica_template(rendered, dag_task)


def test_the_claim_is_made_before_the_workflow_and_owned_by_the_dijob() -> None:
    rendered = render(load_job(_job({"size": "2Gi", "storageClassName": "fast"})))
    kinds = [o["kind"] for o in rendered.objects()]
    assert kinds == ["ConfigMap", "Service", "PersistentVolumeClaim", "Workflow"]
    claim = rendered.claim
    assert claim is not None and claim["metadata"]["name"] == "di-j-checkpoints"
    assert [(o["kind"], o["uid"]) for o in claim["metadata"]["ownerReferences"]] == [("DIJob", "u-1")]
    assert claim["spec"] == {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": "2Gi"}},
        "storageClassName": "fast",
    }
    assert claim["metadata"]["labels"]["diengine/job"] == "j"


def test_a_retained_claim_has_no_owner() -> None:
    claim = render(load_job(_job({"reclaimPolicy": "Retain"}))).claim
    assert claim is not None and "ownerReferences" not in claim["metadata"] and "storageClassName" not in claim["spec"]


def test_only_the_mounting_tasks_pods_get_the_volume_the_mounts_and_their_own_directory() -> None:
    init = [{"name": "prep", "image": "x", "command": ["true"]}]
    rendered = render(
        load_job(_job({"tasks": ["collector"]}, task("learner"), task("collector", replicas=2, initContainers=init)))
    )
    for index in (0, 1):
        template = _template(rendered, f"collector-{index}")
        assert {"name": "dihera-checkpoints", "persistentVolumeClaim": {"claimName": "di-j-checkpoints"}} in template[
            "volumes"
        ]
        users = [
            *template["containerSet"]["containers"],
            *[c for c in template["initContainers"] if c["name"] == "prep"],
        ]
        for c in users:
            assert {"name": "dihera-checkpoints", "mountPath": MOUNT} in c["volumeMounts"], c["name"]
        assert container_env(rendered, f"collector-{index}")["DI_CHECKPOINT_DIR"] == f"{MOUNT}/collector-{index}"
    learner = _template(rendered, "learner-0")
    assert all(v["name"] != "dihera-checkpoints" for v in learner["volumes"])
    assert "DI_CHECKPOINT_DIR" not in container_env(rendered, "learner-0")


def test_a_job_without_it_renders_as_before() -> None:
    rendered = render(load_job(_job(None)))
    assert rendered.claim is None and [o["kind"] for o in rendered.objects()] == ["ConfigMap", "Service", "Workflow"]
    assert "DI_CHECKPOINT_DIR" not in container_env(rendered, "learner-0")
