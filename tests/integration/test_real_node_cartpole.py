"""The project's example scaled while it trains: workflows/cartpole-dqn.yaml on the real node, through the
controller and Argo, in the DI-engine image built here, its collectors edited 2 -> 3 -> 1.

The example's run at start with 8 replicas, its learner killed and restarted in place, and its big model are
tests/integration/test_real_node_di_engine.py's `example` job. The example's log lines
(examples/cartpole/cartpole_dqn/__init__.py) say what each replica did.
"""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
from kubernetes import client

from dihera.kube.jobs import JobStore
from tests.integration.controllers import Controller
from tests.integration.jobs import edit_replicas, job_pods
from tests.integration.realjobs import (
    THROTTLED,
    UNTHROTTLED,
    cpu_limit,
    exit_codes,
    follow,
    job_logs,
    on_real_node,
    own_lines,
    resize_learner,
)

pytestmark = [pytest.mark.cluster, pytest.mark.realnode]

NAME = "cartpole-dqn"
STOP_VALUE = 195.0


def fields(line: str) -> dict[str, str]:
    """`dihera-<event> key=value ...` -> {"event": ..., key: value}."""
    event, *pairs = line.split(" ")
    return {"event": event.removeprefix("dihera-"), **dict(p.split("=", 1) for p in pairs if "=" in p)}


def contract_lines(log: str) -> list[dict[str, str]]:
    return [fields(line) for line in own_lines(log) if re.match(r"^dihera-[a-z-]+ ", line)]


SCALE_TIME_BOUND = 540


def added_collector_timeline(logs: dict[str, list[str]], pods: dict[str, Any], added: str) -> dict[str, bool]:
    """Where the added collector is: pod running, DI-engine started (role line), collecting with a model
    from the learner (`dihera-collect` with model_iter > 0: the learner's iteration of the model in use)."""
    statuses = (pods.get(added) or {}).get("status", {}).get("containerStatuses", [])
    running = any(s["name"] == "di-container" and "running" in (s.get("state") or {}) for s in statuses)
    lines = [fields(line) for line in logs.get(added, []) if re.match(r"^dihera-[a-z-]+ ", line)]
    return {
        "added pod's main running": running,
        "added replica started DI-engine": any(x["event"] == "role" for x in lines),
        "added collector collects with a learner model": any(
            x["event"] == "collect" and int(x["model_iter"]) > 0 for x in lines
        ),
    }


def test_collectors_added_then_removed_mid_training_and_the_job_still_reaches_the_stop_value(
    ding_image: str,
    controller: Controller,
    cluster: client.ApiClient,
    namespace: str,
) -> None:
    """kubectl edit of the collectors' replicas while the learner trains: 2 -> 3 (the new collector, rank 4,
    dials the four lower ranks, DI-engine's mesh, and collects with the models the learner broadcasts after
    each iteration), then 3 -> 1 before the stop value; the learner, the evaluator and collector-0 are never
    restarted (one pod UID each for the whole run, the learner's container never restarted though resized
    in place, see THROTTLED), and the job Succeeds."""
    JobStore(cluster).create(on_real_node("cartpole-dqn.yaml", namespace, ding_image, cluster))
    start = time.monotonic()
    added = f"{NAME}-collector-2"
    steps: list[str] = []
    uids: dict[str, set[str]] = {}  # hostname -> every pod UID seen during the run
    timeline: dict[str, float] = {}  # what happened -> seconds after the DIJob was created
    added_lines: list[str] = []  # the added collector's contract lines, read while its pod existed

    def elastic(status: dict[str, Any]) -> None:
        pods = {p["spec"]["hostname"]: p for p in job_pods(cluster, namespace, NAME)}
        for host, pod in pods.items():
            uids.setdefault(host, set()).add(pod["metadata"]["uid"])
        if len(steps) == 2 or (not steps and status.get("phase") != "Running"):
            return
        named = job_logs(cluster, namespace, NAME)
        logs = {host: own_lines(named.get(pod["metadata"]["name"], "")) for host, pod in pods.items()}
        now = round(time.monotonic() - start, 1)
        if any(line.startswith("dihera-stop-value-reached ") for lines in logs.values() for line in lines):
            pytest.fail(
                f"the stop value was reached before the scale steps (done: {steps}, seen at {now} s); timeline "
                f"{timeline}; the added collector's log ends: {logs.get(added, [])[-15:]}"
            )
        learner = pods[f"{NAME}-learner-0"]
        if not steps and any(line.startswith("dihera-progress ") for line in logs.get(f"{NAME}-learner-0", [])):
            edit_replicas(cluster, namespace, NAME, collector=3)
            resize_learner(cluster, namespace, learner["metadata"]["name"], THROTTLED)
            steps.append("up")
            timeline["learner trains: scaled 2 -> 3, learner throttled"] = now
            return
        if steps != ["up"]:
            return
        if cpu_limit(learner) == THROTTLED["limits"]["cpu"]:
            timeline.setdefault("the kubelet applied the throttle", now)
        for event, seen in added_collector_timeline(logs, pods, added).items():
            if seen:
                timeline.setdefault(event, now)
        if "added collector collects with a learner model" in timeline:
            added_lines[:] = [line for line in logs[added] if line.startswith("dihera-")]
            resize_learner(cluster, namespace, learner["metadata"]["name"], UNTHROTTLED)
            edit_replicas(cluster, namespace, NAME, collector=1)
            steps.append("down")
            timeline["learner unthrottled, scaled 3 -> 1"] = now

    run = follow(cluster, namespace, NAME, timeout=SCALE_TIME_BOUND, on_tick=elastic)
    logs = job_logs(cluster, namespace, NAME)
    assert steps == ["up", "down"], (steps, timeline, run.phases)
    assert run.status["phase"] == "Succeeded", (run.phases, run.status, {p: log[-3000:] for p, log in logs.items()})
    assert run.status["restarts"] == 0, run.status

    added_contract = contract_lines("\n".join(added_lines))
    assert [x["role"] for x in added_contract if x["event"] == "role"] == ["collector"], added_lines
    assert any(x["event"] == "collect" and int(x["model_iter"]) > 0 for x in added_contract), added_lines
    pods: dict[str, list[dict[str, Any]]] = {}
    for pod in job_pods(cluster, namespace, NAME):
        pods.setdefault(pod["spec"]["hostname"], []).append(pod)
    for host in (f"{NAME}-learner-0", f"{NAME}-evaluator-0", f"{NAME}-collector-0"):  # never restarted
        assert len(uids[host]) == 1 and [p["metadata"]["uid"] for p in pods[host]] == list(uids[host]), host
        assert pods[host][0]["status"]["phase"] == "Succeeded" and set(exit_codes(pods[host][0]).values()) == {0}
        assert all(c.get("restartCount", 0) == 0 for c in pods[host][0]["status"]["containerStatuses"]), host
    evaluator = next(contract_lines(log) for log in logs.values() if "dihera-role role=evaluator" in log)
    reached = [x for x in evaluator if x["event"] == "stop-value-reached"]
    assert len(reached) == 1 and float(reached[0]["return"]) >= STOP_VALUE, evaluator
    timeline["Succeeded"] = round(run.seconds, 1)
    print(f"\n[cartpole] scaled 2 -> 3 -> 1 mid-training; seconds after create: {timeline}; phases {run.phases}")
