"""The generated CRD on a real API server: its CEL rules refuse bad DIJobs at apply time, naming the field."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from dihera import load_job
from dihera.schema import GROUP, PLURAL, VERSION
from tests.builders import job, task

pytestmark = pytest.mark.cluster


def create(api: client.ApiClient, namespace: str, manifest: dict[str, Any], dry_run: bool = True) -> Any:
    return client.CustomObjectsApi(api).create_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, manifest, dry_run="All" if dry_run else None
    )


REJECTED = [
    pytest.param(
        job(task("collector"), task("collector", name="c2")),
        "spec.tasks",
        "at most one task of each type learner, collector and evaluator",
        id="two-tasks-of-one-type",
    ),
    pytest.param(
        job(task("none", name="x"), task("none", name="x")),
        "spec.tasks",
        "task names must be unique",
        id="one-name-twice",
    ),
    pytest.param(
        job(task("learner"), task("none", name="learner")),
        "spec.tasks",
        "task names must be unique",
        id="defaulted-name-clash",
    ),
    pytest.param(job(task("none")), "spec.tasks[0].name", "a task of type none must have a name", id="unnamed-none"),
    pytest.param(
        job(task("learner"), minReplicas=3, maxReplicas=2),
        "spec.minReplicas",
        "minReplicas must not exceed maxReplicas",
        id="min-above-max",
    ),
    pytest.param(
        job(task("collector", replicas=6), maxReplicas=5), "spec.tasks", "must be at most maxReplicas", id="above-max"
    ),
    pytest.param(
        job(task("collector", replicas=1), minReplicas=2), "spec.tasks", "must be at least minReplicas", id="below-min"
    ),
    pytest.param(
        job(task("none", name="a" * 31), name="j" * 30),
        "spec.tasks",
        "pod hostnames <job>-<task>-<index> must be at most 63 characters",
        id="hostname-too-long",
    ),
    pytest.param(job(task("learner"), name="j" * 61), "metadata.name", "may not be more than 60", id="name-too-long"),
    pytest.param(job(task("bogus", name="x")), "spec.tasks[0].type", "Unsupported value", id="bad-type"),
    pytest.param(
        job(task("learner", replicas=0)),
        "spec.tasks[0].replicas",
        "should be greater than or equal to 1",
        id="zero-replicas",
    ),
    pytest.param(job(task("none", name="Bad_Name")), "spec.tasks[0].name", "should match", id="task-name-not-dns"),
    pytest.param(job({**task("learner"), "envProvider": {"name": "pytorch"}}), "spec.tasks[0].envProvider.name",
                 "Unsupported value", id="unknown-env-provider"),
    pytest.param(job({**task("learner"), "envProvider": {"name": "torch", "role": "worker"}}),
                 "spec.tasks[0].envProvider.role", "must be a role of its provider", id="torch-with-a-role"),
    pytest.param(job({**task("learner"), "envProvider": {"name": "mxnet", "role": "chief"}}),
                 "spec.tasks[0].envProvider.role", "must be a role of its provider", id="mxnet-with-a-tf-role"),
    pytest.param(job({**task("learner"), "envProvider": {"name": "torch", "port": 0}}),
                 "spec.tasks[0].envProvider.port", "should be greater than or equal to 1", id="port-zero"),
    pytest.param(job(task("learner"), task("collector"), successPolicy={"targetTasks": ["lerner"]}),
                 "spec.successPolicy.targetTasks", "must name tasks of the job", id="success-policy-unknown-task"),
    pytest.param(job(task("learner"), successPolicy={"operator": "Some"}), "spec.successPolicy.operator",
                 "Unsupported value", id="success-policy-operator"),
    pytest.param(job(task("learner"), activeDeadlineSeconds=0), "spec.activeDeadlineSeconds",
                 "should be greater than or equal to 1", id="deadline-zero"),
    pytest.param(job(task("learner"), ttlSecondsAfterFinished=-1), "spec.ttlSecondsAfterFinished",
                 "should be greater than or equal to 0", id="ttl-negative"),
    pytest.param(job({**task("collector"), "failurePolicy": "Drop"}), "spec.tasks[0].failurePolicy",
                 "Unsupported value", id="failure-policy-unknown"),
    pytest.param(job({**task("none", name="ddp"), "failurePolicy": "DropReplica", "envProvider": {"name": "torch"}}),
                 "spec.tasks[0].failurePolicy", "needs envProvider.allowScaling: true",
                 id="drop-replica-on-a-fixed-group"),
    pytest.param(job(task("learner"), suspend="yes"), "spec.suspend", "must be of type boolean", id="suspend-not-bool"),
    pytest.param(job(task("learner"), checkpoint={"tasks": ["lerner"]}), "spec.checkpoint.tasks",
                 "must name tasks of the job", id="checkpoint-unknown-task"),
    pytest.param(job(task("learner"), checkpoint={"size": "0Gi"}), "spec.checkpoint.size",
                 "a quantity above zero", id="checkpoint-size-zero"),
    pytest.param(job(task("learner"), checkpoint={"size": "ten"}), "spec.checkpoint.size", "should match",
                 id="checkpoint-size-not-a-quantity"),
    pytest.param(job(task("learner"), checkpoint={"mountPath": "ckpt"}), "spec.checkpoint.mountPath", "should match",
                 id="checkpoint-relative-path"),
    pytest.param(job(task("learner"), checkpoint={"reclaimPolicy": "Recycle"}), "spec.checkpoint.reclaimPolicy",
                 "Unsupported value", id="checkpoint-reclaim-policy"),
]


@pytest.mark.compat
@pytest.mark.parametrize(("manifest", "field", "message"), REJECTED)
def test_api_server_refuses_bad_jobs(
    dijob_crd: None, cluster: client.ApiClient, namespace: str, manifest: dict[str, Any], field: str, message: str
) -> None:
    with pytest.raises(ApiException) as err:
        create(cluster, namespace, manifest)
    assert err.value.status == 422
    text = json.loads(err.value.body)["message"]
    assert field in text and message in text, text
    # the Python validator refuses the same jobs
    with pytest.raises(ValueError):
        load_job(manifest)


def test_api_server_applies_defaults_like_the_python_model(
    dijob_crd: None, cluster: client.ApiClient, namespace: str
) -> None:
    manifest = job(task("learner"), task("collector", replicas=2), task("none", name="replay"), name="defaults")
    stored = create(cluster, namespace, manifest, dry_run=False)
    assert stored["spec"]["backoffLimit"] == 3
    assert stored["spec"]["cleanPodPolicy"] == "Running"
    assert stored["spec"]["priority"] == "normal"
    assert stored["spec"]["preemptible"] is False
    assert [t["replicas"] for t in stored["spec"]["tasks"]] == [1, 2, 1]
    expected = load_job(manifest).to_manifest()["spec"]
    server = load_job(stored).to_manifest()["spec"]
    assert server == expected


def test_api_server_defaults_the_checkpoint_volume_like_the_python_model(
    dijob_crd: None, cluster: client.ApiClient, namespace: str
) -> None:
    manifest = job(task("learner"), task("collector"), name="ckpt", checkpoint={})
    stored = create(cluster, namespace, manifest, dry_run=False)
    assert stored["spec"]["checkpoint"] == {
        "size": "1Gi",
        "accessMode": "ReadWriteOnce",
        "mountPath": "/var/dihera/checkpoints",
        "reclaimPolicy": "Delete",
    }
    assert load_job(stored).to_manifest()["spec"] == load_job(manifest).to_manifest()["spec"]
    assert load_job(stored).checkpoint.tasks == ("learner",)  # type: ignore[union-attr]


def test_api_server_accepts_and_defaults_the_lifecycle_fields_like_the_python_model(
    dijob_crd: None, cluster: client.ApiClient, namespace: str
) -> None:
    collectors = {**task("collector", replicas=2), "failurePolicy": "DropReplica"}
    manifest = job(task("learner"), task("none", name="replay"), collectors, name="lifecycle",
                   successPolicy={"targetTasks": ["replay"]}, activeDeadlineSeconds=60, ttlSecondsAfterFinished=0,
                   suspend=True)
    stored = create(cluster, namespace, manifest, dry_run=False)
    assert stored["spec"]["successPolicy"] == {"operator": "All", "targetTasks": ["replay"]}
    assert stored["spec"]["suspend"] is True and stored["spec"]["tasks"][2]["failurePolicy"] == "DropReplica"
    assert load_job(stored).to_manifest()["spec"] == load_job(manifest).to_manifest()["spec"]


def test_api_server_defaults_env_provider_like_the_python_model(dijob_crd: None, cluster: client.ApiClient,
                                                                namespace: str) -> None:
    manifest = job({**task("learner", replicas=2), "envProvider": {"name": "torch"}}, name="ddp")
    stored = create(cluster, namespace, manifest, dry_run=False)
    assert stored["spec"]["tasks"][0]["envProvider"] == {"name": "torch", "allowScaling": False}
    assert load_job(stored).to_manifest()["spec"] == load_job(manifest).to_manifest()["spec"]


def test_every_example_is_accepted(dijob_crd: None, cluster: client.ApiClient, namespace: str) -> None:
    import yaml

    from tests.golden import examples

    for path in examples():
        manifest = yaml.safe_load(path.read_text())
        manifest["metadata"].pop("namespace", None)
        create(cluster, namespace, manifest)


def _set(manifest: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    node: Any = manifest
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return manifest


UNKNOWN_FIELDS = [
    pytest.param(("spec", "backofflimit"), 2, "spec.backofflimit", id="spec-typo"),
    pytest.param(("spec", "tasks", 0, "replica"), 2, "spec.tasks[0].replica", id="task-typo"),
    pytest.param(("spec", "tasks", 0, "template", "spek"), {}, "spec.tasks[0].template.spek", id="template-typo"),
    pytest.param(("specc",), {}, "specc", id="root-typo"),
]


@pytest.mark.parametrize(("path", "value", "field"), UNKNOWN_FIELDS)
def test_strict_field_validation_refuses_unknown_dijob_fields(dijob_crd: None, cluster: client.ApiClient,
                                                              namespace: str, path: tuple[Any, ...], value: Any,
                                                              field: str) -> None:
    """What `kubectl apply --validate=strict` asks for (fieldValidation=Strict): the schema keeps no unknown field."""
    manifest = _set(job(task("learner")), path, value)
    with pytest.raises(ApiException) as err:
        client.CustomObjectsApi(cluster).create_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, manifest, dry_run="All", field_validation="Strict")
    assert err.value.status == 400
    text = json.loads(err.value.body)["message"]
    assert f'unknown field "{field}"' in text, text
    # dihera validate refuses the same field, naming it
    with pytest.raises(ValueError, match=field.replace("[", r"\[").replace("]", r"\]") + ": unknown field"):
        load_job(manifest)


EXPLAINED = [
    pytest.param("dijobs.spec.suspend", "nothing is created until it is false", id="suspend"),
    pytest.param("dijobs.spec.tasks.failurePolicy", "DropReplica: the replica is removed", id="failure-policy"),
    pytest.param("dijobs.status.droppedReplicas", "ReplicaDropped Warning Event", id="dropped-replicas"),
]


def test_kubectl_get_wide_shows_the_last_checkpoint_a_job_reported(
    dijob_crd: None, cluster: client.ApiClient, kubeconfig: Path, namespace: str
) -> None:
    """The CRD's printer column Checkpoint: ``status.profilings.checkpoint.iteration`` (docs/checkpoints.md)."""
    create(cluster, namespace, job(task("learner"), name="ckpt-column"), dry_run=False)

    def column(name: str) -> str:
        out = subprocess.run(
            ["kubectl", f"--kubeconfig={kubeconfig}", "-n", namespace, "get", "dijob", "ckpt-column", "-o", "wide"],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        header, row = out.splitlines()
        start = header.index(name)
        after = [header.index(h, start + 1) for h in header[start + len(name) :].split()[:1]]
        return row[start : after[0] if after else None].strip()

    assert column("CHECKPOINT") in ("", "<none>"), "nothing reported yet"
    reported = {"iteration": 270, "path": "/ckpt/learner-0/iteration_270.pth.tar", "replica": "learner-0"}
    client.CustomObjectsApi(cluster).patch_namespaced_custom_object_status(
        GROUP, VERSION, namespace, PLURAL, "ckpt-column", {"status": {"profilings": {"checkpoint": reported}}}
    )
    assert column("CHECKPOINT") == "270"


@pytest.mark.parametrize(("field", "words"), EXPLAINED)
def test_kubectl_explain_describes_the_lifecycle_fields(
    dijob_crd: None, kubeconfig: Path, poll: Callable[..., Any], field: str, words: str
) -> None:
    """The CRD's descriptions reach `kubectl explain` (published with the CRD's OpenAPI, within seconds)."""

    def explained() -> str | None:
        out = subprocess.run(
            ["kubectl", f"--kubeconfig={kubeconfig}", "explain", field], capture_output=True, text=True, check=False
        )
        text = " ".join(out.stdout.split())  # kubectl wraps descriptions
        return text if words in text else None

    poll(explained, 60, f"kubectl explain {field}")
