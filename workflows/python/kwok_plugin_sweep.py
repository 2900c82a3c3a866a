"""A 100-trial random sweep with podless trial nodes (runner "plugin"): the sweep benchmark's experiment.

    dihera experiment plugin-manifests --namespace NS --image IMAGE --service-account dijob-sweeper | kubectl apply -f -
    dihera experiment render workflows/python/kwok_plugin_sweep.py         # the Workflow (YAML)
    dihera experiment submit workflows/python/kwok_plugin_sweep.py --wait  # run it, with progress

100 learning rates drawn log-uniformly (seed 0), ten trials at a time. Each trial is a DIJob of one
collector; its trial node is an Argo plugin template, not a pod: dihera's executor plugin (a sidecar of the
Workflow's agent pod, `dihera experiment trial-plugin`) creates the trials' DIJobs, at most `parallelism`
alive, the next as soon as one ends, and answers Argo with each trial's phase and metric
(docs/experiments.md, "Podless trials").

The trials are simulated: on the local control plane's kwok nodes a replica "runs" for the
`sim.dihera.io/run-seconds` annotation and succeeds (give the job a real program on a real cluster).

Needs: Argo's executor plugins enabled (`ARGO_EXECUTOR_PLUGINS=true` on the workflow-controller; the local
control plane sets it) and, in the namespace, what `dihera experiment plugin-manifests` prints (the plugin's
ConfigMap, ServiceAccount and Role; the sweep's ServiceAccount's token and Argo's agent Role) beside the
sweep's Role of docs/experiments.md.

CI runs this file as the sweep benchmark (bench/bench_sweep.py, through `build()`: 100 trials, 3 s each,
the Workflow's own pods on the real node; tests/integration/test_benchmarks.py checks that at most 10
trials ran at once); its rendering is golden (workflows/rendered/kwok_plugin_sweep.yaml).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dihera import experiment as ex
from dihera.sweeps import Sweep

ACCOUNT = "dijob-sweeper"


def build(
    namespace: str = "default",
    dihera_image: str = "dihera:0.1.0",
    trials: int = 100,
    parallelism: int = 10,
    run_seconds: int = 30,
    runner: str = "plugin",
    placement: Mapping[str, Any] | None = None,
    account: str = ACCOUNT,
) -> Sweep:
    """The sweep; ``dihera_image`` runs the plugin and the summary node, ``placement`` (``nodeSelector``,
    ``tolerations``) places the Workflow's own pods (the agent's, the summary's); ``runner`` "resource" makes
    each trial node a pod instead (the benchmark's comparison)."""
    template = {
        "metadata": {"annotations": {"sim.dihera.io/run-seconds": str(run_seconds)}},
        "spec": {"containers": [{"name": "main", "image": "opendilab/ding:nightly", "command": ["ditask"]}]},
    }
    job = ex.dijob("bench", [ex.task("collector", template=template)], namespace=namespace, backoffLimit=0)
    return ex.sweep(
        "bench-sweep",
        job,
        {"lr": ex.loguniform(1e-4, 1e-1)},
        search=ex.random_search(trials, seed=0),
        parallelism=parallelism,
        image=dihera_image,
        service_account=account,
        node_selector=(placement or {}).get("nodeSelector"),
        tolerations=(placement or {}).get("tolerations", ()),
        runner=runner,
    )


experiment = build()
