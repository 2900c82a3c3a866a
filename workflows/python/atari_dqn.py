"""The atari-dqn example (workflows/atari-dqn.yaml) written in Python with dihera's API.

    python workflows/python/atari_dqn.py              # print the DIJob
    python workflows/python/atari_dqn.py --workflow   # print the Argo Workflow (Hera)
"""

from __future__ import annotations

import sys

from dihera import DIJob
from dihera import experiment as ex
from dihera.manifests import dump_yaml

IMAGE = "opendilab/ding:nightly-atari"
CODE = "cd /opt/code/DI-engine/dizoo/atari/example"


def role(label: str, replicas: int = 1) -> dict[str, object]:
    command = (f"{CODE} && ditask --package . --main atari_dqn_dist.main --parallel-workers 1 "
               f"--labels {label} --topology mesh --platform k8s\n")
    container = {
        "name": "di-container",
        "image": IMAGE,
        "imagePullPolicy": "Always",
        "env": [{"name": "PYTHONUNBUFFERED", "value": "1"}],
        "resources": {"requests": {"cpu": 6, "memory": "10Gi"}, "limits": {"cpu": 6, "memory": "10Gi"}},
        "command": ["/bin/bash", "-c"],
        "args": [command],
        "ports": [{"name": "di-port", "containerPort": 22270}],
        "volumeMounts": [{"name": "cache-volume", "mountPath": "/dev/shm"}],
    }
    template = {"spec": {"containers": [container], "restartPolicy": "Never"}}
    return ex.task(label, name=label, replicas=replicas, template=template)


def build() -> DIJob:
    return ex.dijob(
        "atari-dqn",
        [role("learner"), role("evaluator"), role("collector", replicas=2)],
        labels={"experiment": "pong"},
        priority="normal",
        backoffLimit=0,
        cleanPodPolicy="Running",
        preemptible=False,
        volumes=[{"name": "cache-volume", "emptyDir": {"medium": "Memory", "sizeLimit": "128Mi"}}],
    )


if __name__ == "__main__":
    job = build()
    if "--workflow" in sys.argv:
        sys.stdout.write(ex.workflow(job).to_yaml())
    else:
        sys.stdout.write(dump_yaml(job.to_manifest()))
