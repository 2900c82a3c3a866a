"""The checkpoint volume (``spec.checkpoint``, docs/checkpoints.md) on the real control plane, with the controller as
the chart's ServiceAccount: the claim is made before the Workflow, owned by the DIJob, bound by Kubernetes' own PV
controller, mounted by the learner's pod only, with ``DI_CHECKPOINT_DIR``; it outlives the Workflow when the job is
suspended and the resumed pods mount the same claim; the garbage collector deletes it with the DIJob
(reclaimPolicy Delete), or it stays and a DIJob made again with the same name mounts it again (Retain).

The claims bind to PersistentVolumes the test makes (static provisioning, a StorageClass name of the test's own:
the ``storage_class`` fixture, tests/integration/volumes.py): the simulated nodes run no provisioner.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from kubernetes import client

from dihera.kube.jobs import JobStore
from dihera.kube.objects import ObjectStore
from dihera.naming import checkpoint_claim_name
from tests.integration.conftest import Poll
from tests.integration.controllers import Controller
from tests.integration.jobs import job_pods, manifest, phase_is, task
from tests.integration.lifecycle import set_suspend
from tests.integration.volumes import claim

pytestmark = pytest.mark.cluster

LONG = {"sim.dihera.io/run-seconds": "600"}
MOUNT = "/var/dihera/checkpoints"


def _pv_gone(core: client.CoreV1Api, name: str) -> bool:
    try:
        core.read_persistent_volume(name)
    except client.ApiException as err:
        return err.status == 404
    return False


def mounts(pod: dict[str, Any]) -> dict[str, Any]:
    """What a pod has of the checkpoint volume: its claim, each container's mount path, DI_CHECKPOINT_DIR."""
    volumes = {v["name"]: v for v in pod["spec"].get("volumes", [])}
    containers = [c for c in pod["spec"]["containers"] if c["name"] != "wait"]  # Argo's own: sees every volume
    return {
        "claim": (volumes.get("dihera-checkpoints") or {}).get("persistentVolumeClaim", {}).get("claimName"),
        "paths": sorted(
            m["mountPath"] for c in containers for m in c.get("volumeMounts", []) if m["name"] == "dihera-checkpoints"
        ),
        "dirs": sorted(
            {e.get("value") for c in containers for e in c.get("env", []) if e["name"] == "DI_CHECKPOINT_DIR"}
        ),
    }


def test_the_claim_outlives_suspend_and_goes_with_the_dijob(
    controller: Controller, cluster: client.ApiClient, namespace: str, storage_class: str, poll: Poll
) -> None:
    jobs, objects = JobStore(cluster), ObjectStore(cluster)
    checkpoint = {"size": "512Mi", "storageClassName": storage_class}
    jobs.create(
        manifest("ckpt", namespace, task("learner", **LONG), task("collector", 2, **LONG), checkpoint=checkpoint)
    )
    poll(phase_is(jobs, namespace, "ckpt", "Running"), 90, "ckpt Running")
    made = claim(cluster, namespace, "ckpt")
    assert made is not None
    job_uid = jobs.get(namespace, "ckpt")["metadata"]["uid"]  # type: ignore[index]
    owners = made["metadata"].get("ownerReferences") or []
    assert [(o["kind"], o["uid"]) for o in owners] == [("DIJob", job_uid)], owners
    assert made["spec"]["resources"]["requests"]["storage"] == "512Mi"
    assert made["spec"]["storageClassName"] == storage_class and made["spec"]["accessModes"] == ["ReadWriteOnce"]
    bound = poll(
        lambda: (claim(cluster, namespace, "ckpt") or {}).get("status", {}).get("phase") == "Bound", 60, "Bound"
    )
    assert bound
    seen = {p["metadata"]["labels"]["diengine/pod"]: mounts(p) for p in job_pods(cluster, namespace, "ckpt")}
    assert seen["ckpt-learner-0"] == {"claim": "di-ckpt-checkpoints", "paths": [MOUNT], "dirs": [f"{MOUNT}/learner-0"]}
    for i in range(2):  # the collectors mount nothing: the default is the learner only
        assert seen[f"ckpt-collector-{i}"] == {"claim": None, "paths": [], "dirs": []}, seen

    set_suspend(cluster, namespace, "ckpt", True)
    poll(phase_is(jobs, namespace, "ckpt", "Suspended"), 60, "ckpt Suspended")
    poll(lambda: not job_pods(cluster, namespace, "ckpt"), 60, "every pod gone")
    assert objects.get_workflow(namespace, "ckpt") is None
    kept = claim(cluster, namespace, "ckpt")
    assert kept is not None and kept["metadata"]["uid"] == made["metadata"]["uid"], "the claim outlives the Workflow"
    set_suspend(cluster, namespace, "ckpt", False)
    poll(phase_is(jobs, namespace, "ckpt", "Running"), 90, "ckpt Running again")
    learner = [
        p for p in job_pods(cluster, namespace, "ckpt") if p["metadata"]["labels"]["diengine/task-name"] == "learner"
    ]
    assert [mounts(p)["claim"] for p in learner] == ["di-ckpt-checkpoints"]
    assert claim(cluster, namespace, "ckpt")["metadata"]["uid"] == made["metadata"]["uid"]  # type: ignore[index]

    jobs.delete(namespace, "ckpt")
    started = time.monotonic()
    poll(lambda: claim(cluster, namespace, "ckpt") is None, 90, "the claim deleted with the DIJob")
    print(f"\n[checkpoint] claim gone {time.monotonic() - started:.1f} s after the DIJob was deleted")


def test_a_retained_claim_outlives_the_dijob_and_is_mounted_again_by_its_namesake(
    controller: Controller, cluster: client.ApiClient, namespace: str, storage_class: str, poll: Poll
) -> None:
    jobs = JobStore(cluster)
    checkpoint = {"storageClassName": storage_class, "reclaimPolicy": "Retain", "tasks": ["collector"]}
    doc = manifest("kept", namespace, task("learner", **LONG), task("collector", **LONG), checkpoint=checkpoint)
    jobs.create(doc)
    poll(phase_is(jobs, namespace, "kept", "Running"), 90, "kept Running")
    first = claim(cluster, namespace, "kept")
    assert first is not None and not first["metadata"].get("ownerReferences"), first["metadata"]
    assert first["spec"]["resources"]["requests"]["storage"] == "1Gi"  # the default size
    pods = {p["metadata"]["labels"]["diengine/pod"]: mounts(p) for p in job_pods(cluster, namespace, "kept")}
    assert pods["kept-collector-0"]["dirs"] == [f"{MOUNT}/collector-0"] and pods["kept-learner-0"]["claim"] is None
    jobs.delete(namespace, "kept")
    poll(lambda: jobs.get(namespace, "kept") is None and not job_pods(cluster, namespace, "kept"), 90, "kept deleted")
    time.sleep(2)  # the garbage collector's time to act, had the claim an owner (the Delete test: about 1 s)
    assert claim(cluster, namespace, "kept")["metadata"]["uid"] == first["metadata"]["uid"]  # type: ignore[index]
    jobs.create(doc)  # the same name again: it mounts the retained claim
    poll(phase_is(jobs, namespace, "kept", "Running"), 90, "kept Running again")
    again = [mounts(p)["claim"] for p in job_pods(cluster, namespace, "kept")]
    assert len(again) == 2 and set(again) == {"di-kept-checkpoints", None}, again
    assert claim(cluster, namespace, "kept")["metadata"]["uid"] == first["metadata"]["uid"]  # type: ignore[index]
    jobs.delete(namespace, "kept")
    client.CoreV1Api(cluster).delete_namespaced_persistent_volume_claim(checkpoint_claim_name("kept"), namespace)


def test_the_default_storage_class_provisions_the_claim_on_a_simulated_node(
    controller: Controller, cluster: client.ApiClient, namespace: str, poll: Poll
) -> None:
    """No storageClassName: the local control plane's default StorageClass (the local-path provisioner, whose
    helper pods kwok completes) makes the volume on the node the learner is scheduled to; it goes with the DIJob."""
    jobs, core = JobStore(cluster), client.CoreV1Api(cluster)
    jobs.create(manifest("dflt", namespace, task("learner", **LONG), checkpoint={}))
    poll(phase_is(jobs, namespace, "dflt", "Running"), 120, "dflt Running")
    made = poll(lambda: (c := claim(cluster, namespace, "dflt")) and c["status"]["phase"] == "Bound" and c, 60, "Bound")
    assert made["spec"]["storageClassName"] == "standard"
    pv = core.read_persistent_volume(made["spec"]["volumeName"])
    assert pv.metadata.annotations["pv.kubernetes.io/provisioned-by"] == "rancher.io/local-path"
    (pod,) = job_pods(cluster, namespace, "dflt")
    terms = pv.spec.node_affinity.required.node_selector_terms
    assert terms[0].match_expressions[0].values == [pod["spec"]["nodeName"]]  # made where the learner runs
    jobs.delete(namespace, "dflt")
    poll(lambda: claim(cluster, namespace, "dflt") is None, 90, "the claim deleted with the DIJob")
    gone = poll(lambda: _pv_gone(core, pv.metadata.name), 90, "the volume deleted by the provisioner")
    assert gone
