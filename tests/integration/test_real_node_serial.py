"""A serial DI-engine run for real: workflows/serial.yaml on the real node, through the controller and Argo.

One replica runs `ding -m serial` with the CartPole DQN config DI-engine ships in dizoo (read from the
DI-engine image's site-packages) until the evaluator's return reaches the stop value 195, then exits 0.
"""

from __future__ import annotations

import re

import pytest
from kubernetes import client

from ci.devcluster import realnode
from dihera.kube.jobs import JobStore
from tests.integration.controllers import Controller
from tests.integration.jobs import job_pods
from tests.integration.realjobs import exit_codes, follow, job_logs, on_real_node

pytestmark = [pytest.mark.cluster, pytest.mark.realnode]

NAME = "serial-cartpole"
#: DI-engine's serial evaluator at the stop value (interaction_serial_evaluator.py; rich may wrap the rest).
CONVERGED = re.compile(r"Current episode_return: (-?[0-9.]+) is greater than stop_value: 195\b")
#: From `kubectl apply` to Succeeded; measured as a local process on 2 cores: ~25 s with the imports.
TIME_BOUND = 300


def test_serial_dijob_trains_to_the_stop_value_on_the_real_node(
    ding_image: str,
    controller: Controller,
    cluster: client.ApiClient,
    namespace: str,
) -> None:
    doc = on_real_node("serial.yaml", namespace, ding_image, cluster)
    doc["spec"]["cleanPodPolicy"] = "None"  # the example's All deletes the pod at the end: keep it to read its log
    JobStore(cluster).create(doc)
    run = follow(cluster, namespace, NAME, timeout=TIME_BOUND)
    logs = job_logs(cluster, namespace, NAME)
    assert run.status["phase"] == "Succeeded", (run.phases, run.status, {p: log[-3000:] for p, log in logs.items()})
    (pod,) = job_pods(cluster, namespace, NAME)
    assert pod["spec"]["nodeName"] == realnode.NODE_NAME
    codes = exit_codes(pod)
    assert codes and all(code == 0 for code in codes.values()), codes
    (log,) = logs.values()
    returns = [float(m.group(1)) for m in CONVERGED.finditer(log)]
    assert returns and returns[-1] >= 195, log[-3000:]
