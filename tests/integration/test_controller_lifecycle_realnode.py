"""A replica OOMKilled on the real node (kubelet + containerd, real memory limits) says so in the DIJob status.

Run under ``flock /tmp/dihera-realnode.lock`` (one real node per machine).
"""

from __future__ import annotations

import textwrap
import time
from typing import Any

import pytest
from kubernetes import client

from ci.devcluster.images import PYTHON_IMAGE
from dihera.kube.jobs import JobStore
from tests.integration.conftest import Poll
from tests.integration.controllers import Controller
from tests.integration.jobs import dijob_events, manifest, phase_is
from tests.integration.realjobs import ON_REAL_NODE, executor_account

pytestmark = [pytest.mark.cluster, pytest.mark.realnode]

HOG = """
    chunks = []
    for _ in range(64):
        chunks.append(bytearray(8 << 20))  # 512 MiB in all, far over the limit
"""


def real_task(type_: str, script: str, account: str, **container: Any) -> dict[str, Any]:
    main = {
        "name": "main",
        "image": PYTHON_IMAGE,
        "imagePullPolicy": "Never",
        "command": ["python3", "-u", "-c", textwrap.dedent(script)],
        **container,
    }
    spec = {"containers": [main], "serviceAccountName": account, "terminationGracePeriodSeconds": 1, **ON_REAL_NODE}
    return {"type": type_, "replicas": 1, "template": {"spec": spec}}


def test_an_oom_killed_replica_says_so_in_status_and_an_event(
    controller: Controller,
    cluster: client.ApiClient,
    namespace: str,
    poll: Poll,
) -> None:
    jobs = JobStore(cluster)
    account = executor_account(cluster, namespace)
    limits = {"resources": {"limits": {"memory": "48Mi", "cpu": "500m"}}}
    hog = real_task("collector", HOG, account, **limits)
    learner = real_task("learner", "import time; time.sleep(600)", account)
    jobs.create(manifest("hungry", namespace, learner, hog, backoffLimit=0))
    created = time.monotonic()
    status = poll(phase_is(jobs, namespace, "hungry", "Failed"), 180, "hungry Failed (its collector OOMKilled)")
    print(f"OOMKilled in status {time.monotonic() - created:.1f} s after the DIJob was created")
    message = status["conditions"][-1]["message"]
    assert "replica collector-0" in message and "exit code 137 (OOMKilled)" in message, message
    assert any(e["replica"] == "collector-0" and e["reason"] == "OOMKilled" for e in status["stuckReplicas"]), status
    poll(
        lambda: any(r == "ReplicaStuck" and "OOMKilled" in m for r, m in dijob_events(cluster, namespace, "hungry")),
        30,
        "a ReplicaStuck event naming OOMKilled",
    )
