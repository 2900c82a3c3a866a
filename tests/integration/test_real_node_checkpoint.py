"""The checkpoint volume for real (docs/checkpoints.md): a DIJob with ``checkpoint: {}`` on the real node gets its
claim from the local control plane's default StorageClass (the local-path provisioner, a directory of the cluster's
state on this machine); its replica, run as a non-root user, writes into ``DI_CHECKPOINT_DIR``, fails, is restarted
in place (``DI_RESTART_COUNT`` 1) and finds what its first pod wrote; deleting the DIJob deletes claim, volume and
directory.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from ci.devcluster.images import PYTHON_IMAGE
from dihera.kube.jobs import JobStore
from tests.integration.conftest import Poll
from tests.integration.controllers import Controller
from tests.integration.jobs import job_pods, manifest, phase_is
from tests.integration.realjobs import ON_REAL_NODE, executor_account
from tests.integration.volumes import claim

pytestmark = [pytest.mark.cluster, pytest.mark.realnode]

#: Appends "<restart count> <uid>" to the replica's file, shows the file, and fails unless it is a restart.
SCRIPT = (
    'mkdir -p "$DI_CHECKPOINT_DIR" && echo "$DI_RESTART_COUNT $(id -u)" >> "$DI_CHECKPOINT_DIR/runs" '
    '&& cat "$DI_CHECKPOINT_DIR/runs" && [ "$DI_RESTART_COUNT" -ge 1 ] || exit 3'
)


def learner(account: str) -> dict[str, Any]:
    main = {
        "name": "main",
        "image": PYTHON_IMAGE,
        "imagePullPolicy": "Never",
        "command": ["sh", "-c", SCRIPT],
        "securityContext": {"runAsUser": 65532, "runAsGroup": 65532, "runAsNonRoot": True},
    }
    spec = {"containers": [main], "serviceAccountName": account, "terminationGracePeriodSeconds": 1, **ON_REAL_NODE}
    return {"type": "learner", "replicas": 1, "template": {"spec": spec}}


def test_a_replica_restarted_in_place_finds_what_it_wrote_in_its_checkpoint_directory(
    controller: Controller, cluster: client.ApiClient, namespace: str, poll: Poll
) -> None:
    jobs, core = JobStore(cluster), client.CoreV1Api(cluster)
    account = executor_account(cluster, namespace)
    doc = manifest("keep", namespace, learner(account), backoffLimit=1, cleanPodPolicy="None", checkpoint={})
    started = time.monotonic()
    jobs.create(doc)
    status = poll(phase_is(jobs, namespace, "keep", "Succeeded"), 180, "keep Succeeded after one restart")
    print(
        f"\n[checkpoint] real node: Succeeded after {time.monotonic() - started:.1f} s, restarts {status['restarts']}"
    )
    assert status["restarts"] == 1, status
    made = claim(cluster, namespace, "keep")
    assert made is not None and made["spec"]["storageClassName"] == "standard"  # the default StorageClass
    assert made["status"]["phase"] == "Bound"
    pv = core.read_persistent_volume(made["spec"]["volumeName"])
    assert pv.metadata.annotations["pv.kubernetes.io/provisioned-by"] == "rancher.io/local-path"
    directory = Path(pv.spec.host_path.path)
    runs = (directory / "learner-0" / "runs").read_text().split("\n")
    assert runs[:2] == ["0 65532", "1 65532"], runs  # the first pod's line, then the restarted pod's
    pods = sorted(job_pods(cluster, namespace, "keep"), key=lambda p: p["metadata"]["creationTimestamp"])
    assert len(pods) == 2, [p["metadata"]["name"] for p in pods]
    log = core.read_namespaced_pod_log(pods[1]["metadata"]["name"], namespace, container="main")
    assert "0 65532\n1 65532" in log, log  # the restarted pod read what the first one wrote

    jobs.delete(namespace, "keep")
    poll(lambda: claim(cluster, namespace, "keep") is None, 90, "the claim deleted with the DIJob")
    poll(lambda: not directory.exists(), 90, f"{directory} removed by the provisioner")
