"""The key Argo's executor is told for each artifact names the job's namespace, the DIJob's uid and the pod
(docs/artifacts.md, "Keys"), whatever the artifact repository's key format: what the controller renders,
substituted by Argo's workflow-controller when it makes each pod (a retry's pod its own key).

On the simulated nodes nothing is stored (no pod runs); the key is read from the template Argo hands the pod's
executor (its ``ARGO_TEMPLATE``). The real node's artifacts test stores objects at these keys.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client

from dihera.kube.jobs import JobStore
from tests.builders import TaskBuilder
from tests.integration.conftest import Poll
from tests.integration.controllers import Controller
from tests.integration.jobs import job_pods, manifest, phase_is

pytestmark = [pytest.mark.cluster]

NAME = "keyed"


def _executor_template(pod: dict[str, Any]) -> dict[str, Any]:
    """The template Argo's executor of ``pod`` works from (on its init, supervisor or main container)."""
    spec = pod["spec"]
    for container in [*(spec.get("initContainers") or []), *spec["containers"]]:
        for env in container.get("env") or []:
            if env["name"] == "ARGO_TEMPLATE":
                return dict(json.loads(env["value"]))
    raise AssertionError(f"no ARGO_TEMPLATE in pod {pod['metadata']['name']}")


@pytest.mark.compat
def test_each_pods_artifacts_are_keyed_by_namespace_job_uid_and_the_pod_itself(
    controller: Controller, cluster: client.ApiClient, namespace: str, poll: Poll
) -> None:
    learner = (
        TaskBuilder("learner")
        .command("ditask")
        .annotations({"sim.dihera.io/run-seconds": "1", "sim.dihera.io/fail-attempts": "1"})
        .container(name="di-container", volumeMounts=[{"name": "work", "mountPath": "/work"}])
        .pod_spec(volumes=[{"name": "work", "emptyDir": {}}])
        .obj()
    )
    jobs = JobStore(cluster)
    artifacts = [{"name": "policy", "path": "/work/policy.bin"}, {"name": "experiment", "path": "/work"}]
    jobs.create(manifest(NAME, namespace, learner, backoffLimit=2, artifacts=artifacts))
    poll(phase_is(jobs, namespace, NAME, "Succeeded"), 90, f"{NAME} Succeeded after its learner failed once")
    uid = (jobs.get(namespace, NAME) or {})["metadata"]["uid"]
    pods = job_pods(cluster, namespace, NAME)
    assert len(pods) == 2, [p["metadata"]["name"] for p in pods]  # the failed attempt and its retry
    keys = {}
    for pod in pods:
        name = pod["metadata"]["name"]
        keys[name] = [(a.get("s3") or {}).get("key") for a in _executor_template(pod)["outputs"]["artifacts"]]
        prefix = f"dihera/{namespace}/{NAME}/{uid}/{name}"
        assert keys[name] == [f"{prefix}/policy.tgz", f"{prefix}/experiment.tgz"], keys[name]
    first, second = keys.values()
    assert set(first).isdisjoint(second), keys
