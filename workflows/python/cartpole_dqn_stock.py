"""DI-engine's own distributed DQN (``ding.example.dqn``: CartPole, stop value 195) as a DIJob, in Python.

    python workflows/python/cartpole_dqn_stock.py    # print the ConfigMap, Service and Workflow it renders to

A learner, an evaluator and two collectors, each ``ditask --platform k8s --topology mesh --main
ding.example.dqn.main``: ditask reads DI_RANK and DI_NODES (rank r dials the r lower ranks on port
22270), and DI-engine's example takes its role from the node id = DI_RANK (0 learner, 1 evaluator,
others collectors), so the tasks are listed in that order; no ``--labels``. The evaluator ends training
at the stop value; every process then exits 0. The image is the project's DI-engine image
(ci/images/di-engine: DI-engine 0.5.3, whose wheel ships ``ding.example``); on the local control plane
it is ``dihera.local/di-engine:0.5.3`` (``build(image=...)``).

README.md's "In Python" block is the part between the two README markers below, exactly;
tests/unit/test_readme_python.py keeps them equal and runs the block as README.md shows it.
"""

from __future__ import annotations

# README.md "In Python" begins
from dihera import DIJob, render
from dihera import experiment as ex
from dihera.manifests import dump_yaml_stream

# The same command in every task: DI-engine's stock DQN takes its role from the node id, which ditask
# sets to DI_RANK (0 learner, 1 evaluator, others collectors): the tasks are listed in that order.
ARGS = ["--platform", "k8s", "--topology", "mesh", "--main", "ding.example.dqn.main", "--ports", "22270"]


def dqn_task(type_: str, image: str, replicas: int = 1) -> dict[str, object]:
    container = {
        "name": "di-container",
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "workingDir": "/workspace",  # DI-engine writes ./cartpole_dqn_seed0/ (config, logs, checkpoints)
        "env": [{"name": "OMP_NUM_THREADS", "value": "1"}],
        "command": ["ditask"],
        "args": ARGS,
        "ports": [{"name": "di-port", "containerPort": 22270}],
        "resources": {"requests": {"cpu": "100m", "memory": "512Mi"}, "limits": {"memory": "1536Mi"}},
        "volumeMounts": [{"name": "workdir", "mountPath": "/workspace"}],
    }
    template = {"spec": {"containers": [container], "restartPolicy": "Never"}}
    return ex.task(type_, name=type_, replicas=replicas, template=template)


def build(image: str = "dihera/di-engine:0.5.3", namespace: str = "default") -> DIJob:
    """The DIJob. ``image``: DI-engine 0.5.3 from ci/images/di-engine (dihera.local/di-engine:0.5.3 locally)."""
    tasks = [dqn_task("learner", image), dqn_task("evaluator", image), dqn_task("collector", image, replicas=2)]
    return ex.dijob(
        "cartpole-dqn-stock",
        tasks,
        namespace=namespace,
        backoffLimit=2,
        cleanPodPolicy="Running",
        volumes=[{"name": "workdir", "emptyDir": {"sizeLimit": "256Mi"}}],
    )


if __name__ == "__main__":
    job = build()
    job.to_manifest()  # the DIJob object (kubectl apply, or dihera submit)
    ex.workflow(job)  # the Hera Workflow, to inspect or compose
    print(dump_yaml_stream(render(job).objects()), end="")  # everything the cluster needs
# README.md "In Python" ends
