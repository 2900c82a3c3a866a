"""The atari-dqn example (workflows/atari-dqn.yaml) written in Python with dihera's API.

    python workflows/python/atari_dqn.py              # print the DIJob
    python workflows/python/atari_dqn.py --workflow   # print the Argo Workflow (Hera)
"""

from __future__ import annotations

import sys

from dihera import DIJob
from dihera import experiment as ex
from dihera.manifests import dump_yaml

IMAGE = "dihera/di-engine-atari:0.5.3"  # ci/images/di-engine-atari
#: The same arguments in every task: DI-engine takes the role from the node id (= DI_RANK: 0 learner,
#: 1 evaluator, others collectors), so the tasks are listed in that order.
ARGS = ["--platform", "k8s", "--topology", "mesh", "--package", "/opt/dihera-examples/atari",
        "--main", "atari_dqn.main.main", "--ports", "22270"]


def template() -> dict[str, object]:
    container = {
        "name": "di-container",
        "image": IMAGE,
        "imagePullPolicy": "IfNotPresent",
        "workingDir": "/workspace",
        "env": [{"name": "PYTHONUNBUFFERED", "value": "1"}],
        "resources": {"requests": {"cpu": 6, "memory": "10Gi"}, "limits": {"cpu": 6, "memory": "10Gi"}},
        "command": ["ditask"],
        "args": ARGS,
        "ports": [{"name": "di-port", "containerPort": 22270}],
        "volumeMounts": [
            {"name": "cache-volume", "mountPath": "/dev/shm"},
            {"name": "workdir", "mountPath": "/workspace"},
        ],
    }
    return {"spec": {"containers": [container], "restartPolicy": "Never"}}


def build() -> DIJob:
    return ex.dijob(
        "atari-dqn",
        [
            ex.task("learner", name="learner", template=template()),
            ex.task("evaluator", name="evaluator", template=template()),
            ex.task("collector", name="collector", replicas=2, template=template()),
        ],
        labels={"experiment": "pong"},
        priority="normal",
        backoffLimit=0,
        cleanPodPolicy="Running",
        preemptible=False,
        volumes=[
            {"name": "cache-volume", "emptyDir": {"medium": "Memory", "sizeLimit": "128Mi"}},
            {"name": "workdir", "emptyDir": {"sizeLimit": "2Gi"}},
        ],
    )


if __name__ == "__main__":
    job = build()
    if "--workflow" in sys.argv:
        sys.stdout.write(ex.workflow(job).to_yaml())
    else:
        sys.stdout.write(dump_yaml(job.to_manifest()))
