"""Render a :class:`~dihera.sweeps.sweep.Sweep` into an Argo Workflow with Hera (pure, deterministic).

Shape: the DAG ``sweep`` runs the DAG ``trials``, one node per trial, ``t<index>-<values>-s<seed>`` (the Argo
UI labels each trial with its values), at most ``parallelism`` at a time (the ``trials`` template's
parallelism; with ``Runner.PLUGIN`` the trial template is a plugin template instead, no pod per trial, and
the plugin bounds the trials: :mod:`dihera.sweeps.plugin`), over one ``trial`` resource template that creates
the trial's DIJob (owned by the Workflow:
deleting the experiment deletes its DIJobs; labelled with the creating pod's name, which the Argo UI's pod
link names: dihera.argo_ui) and ends with it (its executor checks every second): Succeeded when the DIJob's
``status.phase`` is ``Succeeded``, Failed when it is ``Failed`` or ``Suspended`` (stopped early, or by hand);
its outputs are the DIJob's phase and ``status.profilings.<metric>``. A failed trial does not stop the sweep
(``continueOn.failed``). With early stopping, the daemon node ``early-stopping`` runs ``dihera experiment
stop-trials`` beside the trials (its log says why it stopped each). When every trial has ended, the
``summary`` node runs ``dihera experiment summarize`` in dihera's image: it reads the trials' DIJobs and
outputs the results table (Markdown, CSV) and the best values (JSON) as parameters, shown in the UI on its
node; with ``Sweep.artifacts`` it also stores the tables and a plot of every trial's metric over iterations
(SVG, :mod:`dihera.sweeps.plot`) as output artifacts in Argo's artifact repository.
"""

from __future__ import annotations

import json
import re
from typing import Any

from hera.workflows import Workflow
from hera.workflows import models as m
from pydantic import ConfigDict

from dihera.artifacts import file_key, key_prefix
from dihera.constants import ANNOTATION_WORKFLOW_DESCRIPTION, ANNOTATION_WORKFLOW_TITLE, LABEL_TRIALS, MANAGED_BY
from dihera.sweeps.plugin import PLUGIN_NAME
from dihera.sweeps.space import Trial
from dihera.sweeps.stopping import StoppingRule
from dihera.sweeps.sweep import LABEL_EXPERIMENT, LABEL_GOAL, LABEL_METRIC, Runner, Sweep, value_text
from dihera.workflow_parts import CHECK_EVERY_SECOND, RESTRICTED, tolerations

__all__ = [
    "RESULTS_DIR",
    "STOPPER",
    "SUMMARY",
    "SUMMARY_ARTIFACTS",
    "TRIAL",
    "TRIALS",
    "SweepWorkflow",
    "build_sweep_workflow",
    "task_name",
]

ENTRYPOINT = "sweep"
TRIALS = "trials"
TRIAL = "trial"
SUMMARY = "summary"
STOPPER = "early-stopping"
#: Where the summary step writes its files (an emptyDir: the container's root filesystem is read-only).
RESULTS_DIR = "/tmp/results"


def _slug(text: str, limit: int = 16) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower().replace(".", "p")).strip("-")[:limit].strip("-") or "x"


def task_name(sweep: Sweep, trial: Trial) -> str:
    """The trial's DAG task: ``t<index>-<name>-<value>...-s<seed>`` (≤ 63 characters)."""
    width = len(sweep.trial_name(trial.index)) - len(sweep.name) - 2
    parts = [f"t{trial.index:0{width}d}"]
    for name, value in trial.values.items():
        parts += [_slug(name, 12), _slug(value_text(value))]
    return "-".join([*parts, f"s{trial.seed}"])[:57].strip("-")


class _PluginSpec(m.Plugin):
    """A plugin template's body (Hera's ``Plugin`` model has no fields: its keys are the plugin's names)."""

    model_config = ConfigDict(**m.Plugin.model_config, extra="allow")


class SweepWorkflow(Workflow):
    """Hera's Workflow, dumped with the plugin template's body (declared ``Plugin``, dumped as what it is)."""

    def to_dict(self) -> Any:
        return self.build().model_dump(exclude_none=True, by_alias=True, serialize_as_any=True)


def _trial_inputs(sweep: Sweep) -> tuple[list[str], dict[str, str]]:
    inputs = ["job", "trial", "seed", "configuration", *(f"param_{name}" for name in sweep.space)]
    holders = {name: f"{{{{inputs.parameters.{name}}}}}" for name in ("job", "trial", "seed", "configuration")}
    holders.update({name: f"{{{{inputs.parameters.param_{name}}}}}" for name in sweep.space})
    return inputs, holders


def _plugin_trial_template(sweep: Sweep) -> m.Template:
    """A podless trial (``Runner.PLUGIN``): dihera's executor plugin creates the DIJob, at most ``parallelism``
    of the Workflow's alive (:mod:`dihera.sweeps.plugin`); outputs as the resource template's."""
    inputs, holders = _trial_inputs(sweep)
    body = {
        "manifest": sweep.template_manifest(holders),
        "parallelism": sweep.parallelism,
        "metric": sweep.metric,
        "index": holders["trial"],
    }
    return m.Template(
        name=TRIAL,
        inputs=m.Inputs(parameters=[m.Parameter(name=n) for n in inputs]),
        plugin=_PluginSpec(**{PLUGIN_NAME: body}),
    )


def _trial_template(sweep: Sweep) -> m.Template:
    if sweep.runner is Runner.PLUGIN:
        return _plugin_trial_template(sweep)
    metric = sweep.metric
    inputs, holders = _trial_inputs(sweep)
    holders["pod"] = "{{pod.name}}"  # the Argo UI's pod link finds the trial's DIJob by it (dihera.argo_ui)
    manifest = sweep.template_manifest(holders)
    return m.Template(
        name=TRIAL,
        inputs=m.Inputs(parameters=[m.Parameter(name=n) for n in inputs]),
        pod_spec_patch=CHECK_EVERY_SECOND,
        resource=m.ResourceTemplate(
            action="create",
            set_owner_reference=True,
            success_condition="status.phase == Succeeded",
            failure_condition="status.phase in (Failed,Suspended)",
            manifest=json.dumps(manifest, indent=2, sort_keys=True),
        ),
        outputs=m.Outputs(
            parameters=[
                m.Parameter(name="phase", value_from=m.ValueFrom(json_path="{.status.phase}")),
                m.Parameter(name=sweep.metric, value_from=m.ValueFrom(json_path=f"{{.status.profilings.{metric}}}")),
            ]
        ),
    )


#: A trial that failed, or whose node errored (its pod deleted or evicted), does not stop the sweep.
_CONTINUE = m.ContinueOn(failed=True, error=True)


def _experiment_args(sweep: Sweep) -> list[str]:
    """Which DIJobs are the sweep's: its label and, among those, the ones this Workflow owns (a namesake's
    leftovers are not read or stopped)."""
    return [
        "--namespace", sweep.namespace, "--experiment", sweep.name, "--workflow-uid", "{{workflow.uid}}",
        "--metric", sweep.metric, "--goal", sweep.goal.value,
    ]  # fmt: skip


def _stopper_template(sweep: Sweep, rule: StoppingRule) -> m.Template:
    """The daemon that stops hopeless trials (``dihera experiment stop-trials``): no files, no outputs."""
    command = ["dihera", "experiment", "stop-trials", *_experiment_args(sweep), *rule.to_args()]
    return m.Template(
        name=STOPPER,
        daemon=True,
        container=m.Container(image=sweep.image, command=command, security_context=RESTRICTED),
    )


#: The summary's files stored as output artifacts (``Sweep.artifacts``), unarchived: the Argo UI and argo
#: server serve each as it is (the plot opens in the browser), from ``dihera/<namespace>/<sweep>/<Workflow uid>/
#: <pod>/<artifact>/<file>`` (:func:`dihera.artifacts.file_key`), whatever the repository's key format.
SUMMARY_ARTIFACTS = {"plot": "trials.svg", "table": "results.md", "table-csv": "results.csv"}


def _summary_artifacts(sweep: Sweep) -> list[m.Artifact] | None:
    if not sweep.artifacts:
        return None
    none = m.ArchiveStrategy(none=m.NoneStrategy())
    prefix = key_prefix(sweep.namespace, sweep.name, None)
    return [
        m.Artifact(name=k, path=path, archive=none, s3=m.S3Artifact(key=file_key(prefix, k, path)))
        for k, path in ((k, f"{RESULTS_DIR}/{f}") for k, f in SUMMARY_ARTIFACTS.items())
    ]


def _summary_template(sweep: Sweep) -> m.Template:
    if sweep.runner is Runner.PLUGIN and not sweep.artifacts:  # no files to store: no pod either
        body = {"summary": {"experiment": sweep.name, "metric": sweep.metric, "goal": sweep.goal.value}}
        return m.Template(name=SUMMARY, plugin=_PluginSpec(**{PLUGIN_NAME: body}))
    command = ["dihera", "experiment", "summarize", *_experiment_args(sweep), "--out", RESULTS_DIR]
    return m.Template(
        name=SUMMARY,
        container=m.Container(
            image=sweep.image,
            command=command,
            security_context=RESTRICTED,
            volume_mounts=[m.VolumeMount(name="results", mount_path=RESULTS_DIR)],
        ),
        volumes=[m.Volume(name="results", empty_dir=m.EmptyDirVolumeSource())],
        outputs=m.Outputs(
            parameters=[
                m.Parameter(name="best", value_from=m.ValueFrom(path=f"{RESULTS_DIR}/best.json")),
                m.Parameter(name="results", value_from=m.ValueFrom(path=f"{RESULTS_DIR}/results.md")),
                m.Parameter(name="results-csv", value_from=m.ValueFrom(path=f"{RESULTS_DIR}/results.csv")),
            ],
            artifacts=_summary_artifacts(sweep),
        ),
    )


def _trials(sweep: Sweep) -> m.Template:
    tasks = []
    for trial in sweep.trials:
        arguments = [
            m.Parameter(name="job", value=sweep.trial_name(trial.index)),
            m.Parameter(name="trial", value=str(trial.index)),
            m.Parameter(name="seed", value=str(trial.seed)),
            m.Parameter(name="configuration", value=str(trial.index // len(sweep.seeds))),
            *(m.Parameter(name=f"param_{k}", value=value_text(v)) for k, v in trial.values.items()),
        ]
        tasks.append(
            m.DAGTask(
                name=task_name(sweep, trial),
                template=TRIAL,
                arguments=m.Arguments(parameters=arguments),
                continue_on=_CONTINUE,
            )
        )
    # plugin nodes are not pods, which is all a DAG's parallelism counts: the plugin bounds them itself
    parallelism = sweep.parallelism if sweep.runner is Runner.RESOURCE else None
    return m.Template(name=TRIALS, parallelism=parallelism, dag=m.DAGTemplate(tasks=tasks))


def _dag(sweep: Sweep) -> m.Template:
    tasks = [
        m.DAGTask(name=TRIALS, template=TRIALS),
        m.DAGTask(name=SUMMARY, template=SUMMARY, dependencies=[TRIALS]),
    ]
    if sweep.early_stopping is not None:  # best effort: a daemon that failed fails no trial and not the sweep
        tasks.insert(0, m.DAGTask(name=STOPPER, template=STOPPER, continue_on=_CONTINUE))
    return m.Template(name=ENTRYPOINT, dag=m.DAGTemplate(tasks=tasks))


def build_sweep_workflow(sweep: Sweep) -> SweepWorkflow:
    """The Hera ``Workflow`` that runs ``sweep``."""
    trials = sweep.trials
    names = ", ".join(sweep.space)
    description = (
        f"{len(trials)} trials of DIJob {sweep.job.name} over {names} x {len(sweep.seeds)} seeds, "
        f"{sweep.parallelism} at a time; ranked by {sweep.metric} ({sweep.goal.value})"
    )
    return SweepWorkflow(
        api_version="argoproj.io/v1alpha1",
        kind="Workflow",
        name=sweep.name,
        namespace=sweep.namespace,
        labels={
            **MANAGED_BY,
            LABEL_EXPERIMENT: sweep.name,
            LABEL_METRIC: sweep.metric,
            LABEL_GOAL: sweep.goal.value,
            LABEL_TRIALS: str(len(trials)),
        },
        annotations={ANNOTATION_WORKFLOW_TITLE: f"Sweep {sweep.name}", ANNOTATION_WORKFLOW_DESCRIPTION: description},
        entrypoint=ENTRYPOINT,
        service_account_name=sweep.service_account,
        node_selector=dict(sweep.node_selector) if sweep.node_selector else None,
        tolerations=tolerations(sweep.tolerations),
        templates=[
            _dag(sweep),
            _trials(sweep),
            _trial_template(sweep),
            _summary_template(sweep),
            *([_stopper_template(sweep, sweep.early_stopping)] if sweep.early_stopping is not None else []),
        ],
    )
