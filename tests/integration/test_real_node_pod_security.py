"""Pod Security (issue 42): a DIJob whose pod template meets the ``restricted`` Pod Security Standard runs in a
namespace that enforces it - its pods' other containers (Argo's init and wait, dihera's peer wait) meet it
too - on the real node; one whose template does not is refused at pod creation, and the DIJob's status says
so, naming PodSecurity.
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from ci.devcluster.images import PYTHON_IMAGE
from ci.devcluster.manifests import RESTRICTED
from dihera.kube.jobs import JobStore
from tests.integration.conftest import Poll
from tests.integration.controllers import Controller
from tests.integration.jobs import job_pods, manifest, phase_is
from tests.integration.realjobs import ON_REAL_NODE, executor_account

pytestmark = [pytest.mark.cluster, pytest.mark.realnode]

#: What ``restricted`` asks of a pod the user writes: non-root, the runtime's seccomp profile, and per container
#: no privilege escalation and no capabilities.
POD_SECURITY = {
    "runAsNonRoot": True,
    "runAsUser": 65532,
    "runAsGroup": 65532,
    "seccompProfile": {"type": "RuntimeDefault"},
}
CONTAINER_SECURITY = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


def task(type_: str, replicas: int, account: str, restricted: bool) -> dict[str, Any]:
    main: dict[str, Any] = {
        "name": "main",
        "image": PYTHON_IMAGE,
        "imagePullPolicy": "Never",
        "command": ["python", "-c", "import os; print('rank', os.environ['DI_RANK'], 'uid', os.getuid())"],
    }
    spec: dict[str, Any] = {"containers": [main], "serviceAccountName": account, **ON_REAL_NODE}
    if restricted:
        main["securityContext"] = CONTAINER_SECURITY
        spec["securityContext"] = POD_SECURITY
    return {"type": type_, "replicas": replicas, "template": {"spec": spec}}


def test_a_restricted_job_runs_where_restricted_is_enforced_and_another_is_refused_naming_it(
    controller: Controller, cluster: client.ApiClient, namespace: str, poll: Poll
) -> None:
    core, jobs = client.CoreV1Api(cluster), JobStore(cluster)
    core.patch_namespace(namespace, {"metadata": {"labels": RESTRICTED}})
    account = executor_account(cluster, namespace)
    good = manifest(
        "strict", namespace, task("learner", 1, account, True), task("collector", 2, account, True), backoffLimit=0
    )
    bad = manifest("loose", namespace, task("learner", 1, account, False), backoffLimit=0)
    jobs.create(good)
    jobs.create(bad)
    poll(phase_is(jobs, namespace, "strict", "Succeeded"), 180, "the restricted job Succeeded")
    pods = job_pods(cluster, namespace, "strict")
    assert len(pods) == 3, [p["metadata"]["name"] for p in pods]
    for pod in pods:
        spec = pod["spec"]
        containers = {c["name"]: c for c in [*spec.get("initContainers", []), *spec["containers"]]}
        assert {"init", "dihera-wait-peers", "wait", "main"} <= set(containers), sorted(containers)
        for name, c in containers.items():  # what PSA checked at creation, as the pod holds it
            security = c.get("securityContext") or {}
            assert security.get("allowPrivilegeEscalation") is False, (name, security)
            assert security.get("capabilities", {}).get("drop") == ["ALL"], (name, security)
    status = poll(phase_is(jobs, namespace, "loose", "Failed"), 120, "the job the namespace refuses Failed")
    message = status["conditions"][-1]["message"]
    assert "PodSecurity" in message and "restricted" in message, message
    print(f"\n[pod security] restricted namespace: 3 pods ran; the other job: {message[:300]}")
