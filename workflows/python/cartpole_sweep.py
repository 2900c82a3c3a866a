"""A learning-rate sweep of the CartPole DQN example (workflows/cartpole-dqn.yaml), as one Argo Workflow.

    dihera experiment render workflows/python/cartpole_sweep.py           # the Workflow (YAML)
    dihera experiment submit workflows/python/cartpole_sweep.py --wait    # run it, with progress
    dihera experiment status default/cartpole-lr                          # trials done / running / stopped

Two learning rates (1e-3, DI-engine's default for this config, learns; 0.5 does not) times two seeds,
two trials at a time: four DIJobs, each the example's learner and evaluator and one collector (trials
share the cores: one collector each). A trial's processes get DIHERA_PARAM_LR, DIHERA_SEED and
DIHERA_TRIAL; the example's main takes the learning rate and the seed from them, and its evaluator reports
`evalReturn` (after each evaluation) and its history to the di-server, into the trial DIJob's
status.profilings, which the sweep ranks by. A trial ends Succeeded at the stop value (195). One that
does not learn is stopped (suspended) by the early-stopping node once, from iteration 200 on, its best
return is below the median of the other trials' at the same iteration (an ended trial counts with its
final best), or ends at `activeDeadlineSeconds` (Failed, its last return kept). The summary node outputs
the results table (mean and 95 % interval over the seeds per learning rate) and the best learning rate,
and stores the tables and a plot of every trial's return over iterations (SVG) as artifacts.

Needs: the chart installed (its di-server reachable from pods at DI_SERVER_URL), Argo's artifact repository
(docs/artifacts.md), the DI-engine image (ci/images/di-engine) and dihera's image, and the ServiceAccount
`dijob-sweeper` in the namespace with the Role of docs/experiments.md (create, get, list, watch, patch DIJobs;
create dijobs/profilings, the trials' reports; Argo's workflowtaskresults).

CI runs this file on the local control plane's real node, through the chart
(tests/integration/test_real_node_chart.py, `test_the_cartpole_sweep_example_...`: `build()` with the
images built there and the sweep's own pods placed on that node); its rendering is golden
(workflows/rendered/cartpole_sweep.yaml).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from dihera import experiment as ex
from dihera.sweeps import Sweep
from dihera.validation import load_job

EXAMPLE = Path(__file__).resolve().parents[1] / "cartpole-dqn.yaml"
ACCOUNT = "dijob-sweeper"


def build(
    namespace: str = "default",
    dihera_image: str = "dihera:0.1.0",
    engine_image: str | None = None,
    placement: Mapping[str, Any] | None = None,
) -> Sweep:
    """The sweep; ``dihera_image`` runs its summary and early-stopping nodes (dihera.local/dihera:<version> on
    the local control plane), ``engine_image`` (if given) replaces the example's DI-engine image, and
    ``placement`` (``nodeSelector``, ``tolerations``) places the sweep's own pods."""
    manifest = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    manifest["spec"]["activeDeadlineSeconds"] = 1200  # a trial's budget: a learning rate that never learns
    for task in manifest["spec"]["tasks"]:
        spec = task["template"]["spec"]
        spec["serviceAccountName"] = ACCOUNT  # the evaluator's token may report to the di-server
        if task["type"] == "collector":
            task["replicas"] = 1
        for container in spec["containers"]:
            if engine_image:
                container.update(image=engine_image, imagePullPolicy="IfNotPresent")
    job = load_job(manifest, namespace=namespace)
    return ex.sweep(
        "cartpole-lr",
        job,
        {"lr": ex.choice(0.001, 0.5)},
        seeds=[0, 1],
        parallelism=2,
        metric="evalReturn",
        goal="maximize",
        image=dihera_image,
        service_account=ACCOUNT,
        node_selector=(placement or {}).get("nodeSelector"),
        tolerations=(placement or {}).get("tolerations", ()),
        # stop a trial whose best return is below the other trials' median at the same iteration (from
        # iteration 200 on: DI-engine's evaluator runs every 40 learner iterations in this config)
        early_stopping=ex.median_stopping(min_iterations=200, min_trials=2),
        # the summary's plot of every trial's return over iterations and its tables, kept as Argo artifacts
        # (the example's trials keep their policies there too: it needs Argo's artifact repository)
        artifacts=True,
    )


experiment = build()
