"""The CartPole DQN example (workflows/cartpole-dqn.yaml) trained, its best policy evaluated and exported, as one
Argo Workflow.

    dihera experiment render workflows/python/cartpole_pipeline.py          # the Workflow (YAML)
    dihera experiment submit workflows/python/cartpole_pipeline.py --wait   # run it; prints each step's outputs

Four nodes: `train` creates the DIJob `cartpole-pipeline-train` (the example as it is: a learner, an evaluator
and two collectors, to the stop value 195) and ends with it; `locate` waits until the DIJob's status lists the
evaluator's stored `best-policy` (docs/artifacts.md) and outputs its key; `evaluate` plays that policy for
10 episodes (`python -m cartpole_dqn.evaluate`, in the DI-engine image) and outputs the mean return;
`export` writes its Q-network as TorchScript (`python -m cartpole_dqn.export`: checked by loading it back) and
stores it as the artifact `model`, downloadable from the Argo UI on that node. Steps after `train` take the
policy as an Argo input artifact, by key, from the cluster's artifact repository.

Needs: the chart installed (the controller runs the DIJob), Argo's artifact repository, the DI-engine image
(ci/images/di-engine) and dihera's image, and the ServiceAccount `dijob-sweeper` in the namespace with the
Role of docs/experiments.md (create and get DIJobs; Argo's workflowtaskresults).

CI runs this file on the local control plane's real node, through the chart
(tests/integration/test_real_node_chart.py, `test_the_cartpole_pipeline_example_...`: `build()` with the images
built there and the pipeline's pods placed on that node); its rendering is golden
(workflows/rendered/cartpole_pipeline.yaml).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from dihera import experiment as ex
from dihera.pipelines import Pipeline
from dihera.validation import load_job

EXAMPLE = Path(__file__).resolve().parents[1] / "cartpole-dqn.yaml"
ACCOUNT = "dijob-sweeper"
#: Where the evaluate and export steps write what they output (created by the programs).
OUT = "/tmp/out"
ENGINE = "dihera/di-engine:0.5.3"


def build(
    namespace: str = "default",
    dihera_image: str = "dihera:0.1.0",
    engine_image: str | None = None,
    placement: Mapping[str, Any] | None = None,
) -> Pipeline:
    """The pipeline; ``dihera_image`` runs its locate step, ``engine_image`` (if given) replaces the example's
    DI-engine image in the job and the steps, and ``placement`` (``nodeSelector``, ``tolerations``) places the
    pipeline's own pods."""
    manifest = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    for task in manifest["spec"]["tasks"]:
        for container in task["template"]["spec"]["containers"]:
            if engine_image:
                container.update(image=engine_image, imagePullPolicy="IfNotPresent")
    job = load_job(manifest, namespace=namespace)
    engine = engine_image or ENGINE
    workdir = "/opt/dihera-examples/cartpole"  # the example package, importable from here
    env = {"OMP_NUM_THREADS": "1"}
    resources = {"requests": {"cpu": "100m", "memory": "512Mi"}, "limits": {"memory": "1536Mi"}}
    return ex.pipeline(
        "cartpole-pipeline",
        job,
        policy="best-policy",
        image=dihera_image,
        evaluate=ex.step(
            engine,
            ["python", "-m", "cartpole_dqn.evaluate", ex.POLICY_PATH, "--episodes", "10", "--out", OUT],
            outputs={"mean-return": f"{OUT}/mean", "evaluation": f"{OUT}/evaluation.json"},
            env=env,
            working_dir=workdir,
            resources=resources,
        ),
        export=ex.step(
            engine,
            ["python", "-m", "cartpole_dqn.export", ex.POLICY_PATH, f"{OUT}/cartpole-dqn.pt"],
            artifacts={"model": f"{OUT}/cartpole-dqn.pt"},
            env=env,
            working_dir=workdir,
            resources=resources,
        ),
        service_account=ACCOUNT,
        node_selector=(placement or {}).get("nodeSelector"),
        tolerations=(placement or {}).get("tolerations", ()),
    )


experiment = build()
