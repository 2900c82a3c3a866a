"""Distributed DQN for real (issue 10): workflows/cartpole-dqn.yaml on the real node, through the
controller and Argo, in the DI-engine image built here.

Learner x1, evaluator x1, collector x2, each `ditask --platform k8s --topology mesh` with the DI_RANK /
DI_NODES dihera injects; the evaluator ends the job at CartPole's stop value (195). The example's log
lines (examples/cartpole/cartpole_dqn/__init__.py) say what each replica did.
"""

from __future__ import annotations

import re

import pytest
from kubernetes import client

from ci.devcluster import realnode
from dihera.kube.jobs import JobStore
from tests.integration.realjobs import exit_codes, follow, job_logs, on_real_node, own_lines
from tests.integration.test_controller_jobs import (  # noqa: F401  (fixtures)
    Controller,
    controller,
    controller_kubeconfig,
    job_pods,
)

pytestmark = [pytest.mark.cluster, pytest.mark.realnode]

NAME = "cartpole-dqn"
STOP_VALUE = 195.0
#: From `kubectl apply` to Succeeded. Measured here: 80-250 s as local processes on 2 loaded cores; the
#: pods add their start (and the first read of the 5 GB image). Past this, training did not converge.
TIME_BOUND = 600
ROLES = {"learner": 1, "evaluator": 1, "collector": 2}


def fields(line: str) -> dict[str, str]:
    """`dihera-<event> key=value ...` -> {"event": ..., key: value}."""
    event, *pairs = line.split(" ")
    return {"event": event.removeprefix("dihera-"), **dict(p.split("=", 1) for p in pairs if "=" in p)}


def contract_lines(log: str) -> list[dict[str, str]]:
    return [fields(line) for line in own_lines(log) if re.match(r"^dihera-[a-z-]+ ", line)]


def test_cartpole_dqn_dijob_trains_to_the_stop_value_on_the_real_node(
    ding_image: str,
    controller: Controller,  # noqa: F811
    cluster: client.ApiClient,
    namespace: str,
) -> None:
    JobStore(cluster).create(on_real_node("cartpole-dqn.yaml", namespace, ding_image, cluster))
    run = follow(cluster, namespace, NAME, timeout=TIME_BOUND)
    logs = job_logs(cluster, namespace, NAME)
    assert run.status["phase"] == "Succeeded", (run.phases, run.status, {p: log[-3000:] for p, log in logs.items()})
    conditions = [c["type"] for c in run.status["conditions"]]
    assert conditions[:1] == ["Pending"] and conditions.index("Running") < conditions.index("Succeeded"), conditions
    assert run.phases[-2:] == ["Running", "Succeeded"], run.phases

    pods = job_pods(cluster, namespace, NAME)
    assert len(pods) == sum(ROLES.values()), [p["metadata"]["name"] for p in pods]
    by_role: dict[str, list[list[dict[str, str]]]] = {}
    for pod in pods:
        name = pod["metadata"]["name"]
        assert pod["spec"]["nodeName"] == realnode.NODE_NAME, name
        assert pod["status"]["phase"] == "Succeeded", (name, pod["status"])
        codes = exit_codes(pod)
        assert codes and all(code == 0 for code in codes.values()), (name, codes)
        lines = contract_lines(logs[name])
        role = next(line["role"] for line in lines if line["event"] == "role")
        by_role.setdefault(role, []).append(lines)
    assert {role: len(found) for role, found in by_role.items()} == ROLES

    (evaluator,) = by_role["evaluator"]
    reached = [line for line in evaluator if line["event"] == "stop-value-reached"]
    assert len(reached) == 1 and float(reached[0]["return"]) >= STOP_VALUE, evaluator
    (learner,) = by_role["learner"]
    iters = [int(line["iter"]) for line in learner if line["event"] == "progress"]
    assert iters and iters[0] >= 1 and iters == sorted(iters), learner
    for collector in by_role["collector"]:  # every collector collected with models sent by the learner
        assert any(int(line["model_iter"]) > 0 for line in collector if line["event"] == "collect"), collector
    replicas = [lines for found in by_role.values() for lines in found]
    connected = [lines for lines in replicas if any(line["event"] == "connected" for line in lines)]
    assert len(connected) == len(replicas), "a replica's start-up barrier timed out"
