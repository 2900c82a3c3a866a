"""``dihera experiment``: render, submit and follow a sweep or a pipeline defined in Python; their steps.

    dihera experiment render FILE.py        the experiment's Workflow as YAML
    dihera experiment submit FILE.py        create it; --wait follows it to its end
    dihera experiment status NS/NAME        a sweep's trials done / running / failed, best so far
    dihera experiment summarize ...         a sweep's summary step: the results table and the best
    dihera experiment stop-trials ...       a sweep's early-stopping daemon: suspends hopeless trials
    dihera experiment artifact-key ...      a pipeline's locate step: the key of its DIJob's stored policy
    dihera experiment trial-plugin          a plugin sweep's executor plugin (a sidecar of Argo's agent pod)
    dihera experiment plugin-manifests ...  what a namespace needs for plugin sweeps, as YAML

FILE.py builds the experiment with :func:`dihera.experiment.sweep` or :func:`dihera.experiment.pipeline` and
names it ``experiment`` (or holds one at module level).
"""

from __future__ import annotations

import argparse
import json
import runpy
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from dihera.sweeps.plugin import PLUGIN_PORT

if TYPE_CHECKING:
    from kubernetes import client

    from dihera.pipelines import Pipeline
    from dihera.sweeps import Sweep, TrialResult
    from dihera.sweeps.stopping import StoppingRule

__all__ = ["experiment_manifest", "load_experiment", "load_sweep", "register", "stopping_rule"]

FINAL = ("Succeeded", "Failed", "Error")


def load_sweep(path: str) -> Sweep:
    """The sweep ``path`` defines: its ``experiment`` global, else its only :class:`Sweep`."""
    from dihera.sweeps import Sweep

    scope = runpy.run_path(path)
    if isinstance(scope.get("experiment"), Sweep):
        return scope["experiment"]  # type: ignore[no-any-return]
    found = [v for k, v in scope.items() if isinstance(v, Sweep) and not k.startswith("_")]
    if len(found) != 1:
        raise ValueError(f"{path}: name the sweep `experiment` (found {len(found)} sweeps at module level)")
    return found[0]


def load_experiment(path: str) -> Sweep | Pipeline:
    """The sweep or pipeline ``path`` defines: its ``experiment`` global, else its only one at module level."""
    from dihera.pipelines import Pipeline
    from dihera.sweeps import Sweep

    scope = runpy.run_path(path)
    if isinstance(scope.get("experiment"), (Sweep, Pipeline)):
        return scope["experiment"]  # type: ignore[no-any-return]
    found = [v for k, v in scope.items() if isinstance(v, (Sweep, Pipeline)) and not k.startswith("_")]
    if len(found) != 1:
        raise ValueError(f"{path}: name the experiment `experiment` (found {len(found)} sweeps or pipelines)")
    return found[0]


def experiment_manifest(experiment: Sweep | Pipeline) -> dict[str, Any]:
    from dihera.pipelines import Pipeline, build_pipeline_workflow
    from dihera.sweeps.workflow import build_sweep_workflow

    if isinstance(experiment, Pipeline):
        return build_pipeline_workflow(experiment).to_dict()  # type: ignore[no-any-return]
    return build_sweep_workflow(experiment).to_dict()  # type: ignore[no-any-return]


def _cmd_render(args: argparse.Namespace) -> int:

    try:
        experiment = load_experiment(args.file)
    except ValueError as err:
        print(err, file=sys.stderr)
        return 1
    sys.stdout.write(yaml.safe_dump(experiment_manifest(experiment), sort_keys=False))
    return 0


def _progress(results: list[TrialResult], total: int, metric: str, goal: str) -> str:
    from dihera.sweeps.results import Goal, best, by_configuration

    done = sum(r.phase == "Succeeded" for r in results)
    failed = sum(r.phase == "Failed" for r in results)
    stopped = sum(r.phase == "Stopped" for r in results)
    running = len(results) - done - failed - stopped
    top = best(by_configuration(results), Goal(goal))
    so_far = "none yet" if top is None else f"{json.dumps(dict(top.values), sort_keys=True)} ({metric} {top.mean:.4g})"
    waiting = total - len(results)
    counts = f"{done} done, {running} running, {failed} failed, {stopped} stopped, {waiting} waiting"
    return f"trials {counts} of {total}; best: {so_far}"


def _follow(api: client.ApiClient, namespace: str, name: str, wait: bool, timeout: float) -> int:
    from dihera.kube.experiments import read_workflow, trial_results
    from dihera.sweeps.sweep import LABEL_GOAL, LABEL_METRIC
    from dihera.sweeps.workflow import TRIALS

    deadline = time.monotonic() + timeout
    while True:
        wf = read_workflow(api, namespace, name)
        (trials,) = [t for t in wf["spec"]["templates"] if t["name"] == TRIALS]
        labels = wf["metadata"].get("labels") or {}
        metric, goal = labels.get(LABEL_METRIC, "evalReturn"), labels.get(LABEL_GOAL, "maximize")
        results = trial_results(api, namespace, name, metric, wf["metadata"]["uid"])
        phase = (wf.get("status") or {}).get("phase") or "Pending"
        print(
            f"{namespace}/{name} {phase}: {_progress(results, len(trials['dag']['tasks']), metric, goal)}", flush=True
        )
        if not wait or phase in FINAL:
            return 0 if phase != "Failed" and phase != "Error" else 1
        if time.monotonic() > deadline:
            print(f"{namespace}/{name}: still {phase} after {timeout:.0f}s", file=sys.stderr)
            return 1
        time.sleep(5)


def _pipeline_line(namespace: str, name: str, status: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """One progress line (the Workflow's phase, each step's) and the step nodes."""
    nodes = [n for n in (status.get("nodes") or {}).values() if n.get("type") != "DAG"]
    steps = ", ".join(f"{n['displayName']} {n.get('phase', 'Pending')}" for n in nodes) or "no step started"
    return f"{namespace}/{name} {status.get('phase') or 'Pending'}: {steps}", nodes


def _follow_pipeline(api: client.ApiClient, namespace: str, name: str, timeout: float) -> int:
    """Print the pipeline's steps' phases every 5 s until the Workflow ends, then its steps' output parameters."""
    from dihera.kube.experiments import read_workflow

    deadline = time.monotonic() + timeout
    while True:
        status = read_workflow(api, namespace, name).get("status") or {}
        line, nodes = _pipeline_line(namespace, name, status)
        print(line, flush=True)
        if status.get("phase") in FINAL:
            outputs = [(n["displayName"], o) for n in nodes for o in (n.get("outputs") or {}).get("parameters") or []]
            for step, out in outputs:
                print(f"  {step}.{out['name']} = {out.get('value', '')}")
            return 0 if status.get("phase") == "Succeeded" else 1
        if time.monotonic() > deadline:
            print(f"{namespace}/{name}: still {status.get('phase')} after {timeout:.0f}s", file=sys.stderr)
            return 1
        time.sleep(5)


def _cmd_submit(args: argparse.Namespace) -> int:
    from kubernetes.client.exceptions import ApiException

    from dihera.kube import api_client
    from dihera.kube.errors import describe_api_error
    from dihera.kube.experiments import create_workflow
    from dihera.pipelines import Pipeline

    try:
        experiment = load_experiment(args.file)
        api = api_client(args.kubeconfig, args.context)
        create_workflow(api, experiment_manifest(experiment))
    except ValueError as err:
        print(err, file=sys.stderr)
        return 1
    except ApiException as err:
        print(f"the API server refused the Workflow: {describe_api_error(err)}", file=sys.stderr)
        return 1
    where = f"workflow {experiment.namespace}/{experiment.name} created"
    if isinstance(experiment, Pipeline):
        print(f"{where}: DIJob {experiment.job_name} trained, then its {experiment.policy} evaluated")
        return _follow_pipeline(api, experiment.namespace, experiment.name, args.timeout) if args.wait else 0
    print(f"{where}: {len(experiment.trials)} trials, {experiment.parallelism} at a time")
    _warn_without_plugin(api, experiment)
    return _follow(api, experiment.namespace, experiment.name, True, args.timeout) if args.wait else 0


def _warn_without_plugin(api: client.ApiClient, sweep: Sweep) -> None:
    """A podless sweep's trial nodes fail with Argo's "no plugin executed the template" when the namespace
    lacks dihera's plugin: say so, and what installs it."""
    from dihera.kube.experiments import plugin_installed
    from dihera.sweeps import Runner
    from dihera.sweeps.plugin import PLUGIN_NAME

    if sweep.runner is Runner.PLUGIN and not plugin_installed(api, sweep.namespace, f"{PLUGIN_NAME}-executor-plugin"):
        print(
            f"warning: runner 'plugin' and no ConfigMap {PLUGIN_NAME}-executor-plugin in namespace {sweep.namespace} "
            f"(unless Argo's own namespace has it): install it with `dihera experiment plugin-manifests --namespace "
            f"{sweep.namespace} --image {sweep.image} --service-account {sweep.service_account or 'default'} | "
            "kubectl apply -f -`, and Argo's workflow-controller needs ARGO_EXECUTOR_PLUGINS=true",
            file=sys.stderr,
        )


def _cmd_status(args: argparse.Namespace) -> int:
    from dihera.kube import api_client

    namespace, _, name = args.name.rpartition("/")
    return _follow(api_client(args.kubeconfig, args.context), namespace or "default", name, args.wait, args.timeout)


def _cmd_summarize(args: argparse.Namespace) -> int:
    from dihera.kube import api_client
    from dihera.kube.experiments import trial_results
    from dihera.sweeps.plot import history_plot
    from dihera.sweeps.results import Goal, best_values, csv_table, markdown_table

    goal = Goal(args.goal)
    api = api_client(args.kubeconfig, None)
    results = trial_results(api, args.namespace, args.experiment, args.metric, args.workflow_uid)
    if not results:
        print(f"no DIJob of experiment {args.namespace}/{args.experiment} (label diengine/experiment)", file=sys.stderr)
        return 1
    table = markdown_table(results, args.metric, goal)
    chosen = best_values(results, args.metric, goal)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.md").write_text(table)
    (out / "results.csv").write_text(csv_table(results, args.metric))
    (out / "best.json").write_text(json.dumps(chosen, sort_keys=True))
    (out / "trials.svg").write_text(history_plot(results, args.metric))
    sys.stdout.write(table)
    return 0


def stopping_rule(args: argparse.Namespace) -> StoppingRule:
    """The early-stopping rule ``stop-trials`` was given (what :meth:`StoppingRule.to_args` renders)."""
    from dihera.sweeps.stopping import MedianStopping, SuccessiveHalving

    if args.rule == "halving":
        return SuccessiveHalving(args.min_iterations, args.reduction, args.min_trials)
    return MedianStopping(args.min_iterations, args.min_trials)


def _cmd_stop_trials(args: argparse.Namespace) -> int:
    from dihera.kube import api_client
    from dihera.kube.experiments import stop_trial, trial_jobs
    from dihera.sweeps.results import Goal
    from dihera.sweeps.stopping import trials_to_stop

    api = api_client(args.kubeconfig, None)
    rule, goal = stopping_rule(args), Goal(args.goal)
    key = f"{args.metric}History"
    print(f"early stopping {args.namespace}/{args.experiment}: {rule} on {key} ({goal.value})", flush=True)
    while True:
        try:
            jobs = {
                j["metadata"]["name"]: j for j in trial_jobs(api, args.namespace, args.experiment, args.workflow_uid)
            }
            for name, decision in sorted(trials_to_stop(jobs, args.metric, rule, goal).items()):
                if stop_trial(api, jobs[name], decision.reason(args.metric)):
                    print(f"stopped {name}: {decision.reason(args.metric)}", flush=True)
        except Exception as err:  # an API server outage or refusal: logged, the next round tries again
            print(
                f"this round failed ({type(err).__name__}: {str(err)[:300]}); next in {args.interval:.0f}s", flush=True
            )
        if args.once:
            return 0
        time.sleep(args.interval)


def _cmd_artifact_key(args: argparse.Namespace) -> int:
    """Wait until the DIJob lists the artifact in its status, then write its key to ``--out``."""
    from dihera.kube import api_client
    from dihera.kube.experiments import stored_artifact

    api = api_client(args.kubeconfig)
    deadline = time.monotonic() + args.timeout
    while True:
        key, phase = stored_artifact(api, args.namespace, args.job, args.artifact)
        if key:
            Path(args.out).write_text(key)
            print(f"DIJob {args.namespace}/{args.job} stored {args.artifact}: {key}")
            return 0
        if phase is None and time.monotonic() > deadline:
            print(f"DIJob {args.namespace}/{args.job}: not found", file=sys.stderr)
            return 1
        if time.monotonic() > deadline:
            print(f"DIJob {args.namespace}/{args.job} ({phase}): status.artifacts has no {args.artifact!r} after "
                  f"{args.timeout:g}s (is the path written? docs/artifacts.md)", file=sys.stderr)  # fmt: skip
            return 1
        time.sleep(2)


def _cmd_trial_plugin(args: argparse.Namespace) -> int:
    from dihera.cli import trial_plugin

    return trial_plugin.run(args)


def _cmd_plugin_manifests(args: argparse.Namespace) -> int:
    from dihera.sweeps.plugin import plugin_manifests

    docs = plugin_manifests(args.namespace, args.image, args.service_account)
    print(yaml.safe_dump_all(docs, sort_keys=False), end="")
    return 0


def _register_plugin_verbs(verbs: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    plug = verbs.add_parser("trial-plugin", help="(a sidecar of Argo's agent pod) run a plugin sweep's trials")
    plug.add_argument("--port", type=int, default=PLUGIN_PORT, help=f"port on 127.0.0.1 (default {PLUGIN_PORT})")
    plug.add_argument("--token-file", default="/var/run/argo/token", help="the agent's token (default: Argo's)")
    plug.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster, $KUBECONFIG)")
    plug.set_defaults(func=_cmd_trial_plugin)
    manifests = verbs.add_parser(
        "plugin-manifests", help="what a namespace needs for sweeps with runner 'plugin', as YAML (kubectl apply -f -)"
    )
    manifests.add_argument("--namespace", required=True)
    manifests.add_argument("--image", required=True, help="dihera's image (the plugin sidecar runs it)")
    manifests.add_argument("--service-account", help="the sweeps' ServiceAccount: also its token and Argo's agent Role")
    manifests.set_defaults(func=_cmd_plugin_manifests)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``experiment`` (render, submit, status, summarize) to the ``dihera`` command."""
    p = sub.add_parser("experiment", help="sweeps and pipelines defined in Python: render, submit, status; their steps")
    verbs = p.add_subparsers(dest="verb", required=True, metavar="VERB")
    render = verbs.add_parser("render", help="the sweep's Workflow as YAML")
    render.add_argument("file", metavar="FILE.py")
    render.set_defaults(func=_cmd_render)
    submit = verbs.add_parser("submit", help="create the sweep's Workflow; --wait follows it")
    submit.add_argument("file", metavar="FILE.py")
    status = verbs.add_parser(
        "status", help="a sweep's trials: done, running, failed, stopped, waiting; the best so far"
    )
    status.add_argument("name", metavar="NAMESPACE/NAME")
    for q in (submit, status):
        q.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config)")
        q.add_argument("--context", help="kubeconfig context")
        q.add_argument("--wait", action="store_true", help="follow until the Workflow ends (progress every 5 s)")
        q.add_argument("--timeout", type=float, default=3600.0, help="seconds to wait (default 3600)")
    submit.set_defaults(func=_cmd_submit)
    status.set_defaults(func=_cmd_status)
    summ = verbs.add_parser("summarize", help="(the summary step) the results table, CSV and best values")
    summ.add_argument("--out", required=True, help="directory for results.md, results.csv and best.json")
    summ.set_defaults(func=_cmd_summarize)
    stop = verbs.add_parser("stop-trials", help="(the early-stopping daemon) suspend the trials that cannot win")
    for q in (summ, stop):
        q.add_argument("--namespace", required=True)
        q.add_argument("--experiment", required=True, help="the sweep's name (label diengine/experiment)")
        q.add_argument("--workflow-uid", help="only the trials this Workflow owns (the sweep passes its own)")
        q.add_argument("--metric", required=True, help="the key of status.profilings the sweep ranks by")
        q.add_argument("--goal", choices=("maximize", "minimize"), default="maximize")
        q.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster, $KUBECONFIG)")
    stop.add_argument("--rule", choices=("median", "halving"), default="median", help="the rule (default median)")
    stop.add_argument("--min-iterations", type=int, default=1, help="never stop a trial before this iteration")
    stop.add_argument("--reduction", type=int, default=3, help="halving: keep the best 1/reduction at a rung")
    stop.add_argument("--min-trials", type=int, default=2, help="other trials to compare with at an iteration")
    stop.add_argument("--interval", type=float, default=5.0, help="seconds between two looks (default 5)")
    stop.add_argument("--once", action="store_true", help="look once, then exit")
    stop.set_defaults(func=_cmd_stop_trials)
    _register_plugin_verbs(verbs)
    key = verbs.add_parser("artifact-key", help="(a pipeline's locate step) the key of a DIJob's stored artifact")
    key.add_argument("--namespace", required=True)
    key.add_argument("--job", required=True, help="the DIJob's name")
    key.add_argument("--artifact", required=True, help="the name in its spec.artifacts")
    key.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for it (default 300)")
    key.add_argument("--out", required=True, help="the file the key is written to")
    key.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster, $KUBECONFIG)")
    key.set_defaults(func=_cmd_artifact_key)
