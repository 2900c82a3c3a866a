"""Build DIJobs in Python: tasks from an image and a command, or from a full pod template.

from dihera import experiment as ex
job = ex.dijob("dqn", [ex.task("learner", image=IMG, command=["ditask", ...]),
                       ex.task("collector", replicas=4, image=IMG, command=[...],
                               failure_policy="DropReplica")],
               minReplicas=3, suspend=False)
job.to_manifest()          # the DIJob object
ex.workflow(job)           # the Hera Workflow, to inspect or compose

A sweep: the job over a search space and several seeds, as one Argo Workflow (docs/experiments.md):

sweep = ex.sweep("dqn-lr", job, {"lr": ex.choice(1e-3, 1e-1)}, seeds=[0, 1], parallelism=2,
                 metric="evalReturn", image="dihera:0.1.0")
ex.sweep_workflow(sweep)   # the Hera Workflow; `dihera experiment render|submit FILE.py`

A pipeline: the job trained, then the policy it stored (one of its spec.artifacts) evaluated and exported:

pipe = ex.pipeline("dqn-pipe", job, policy="best-policy", image="dihera:0.1.0",
                   evaluate=ex.step(IMG, ["python", "-m", "my.evaluate", ex.POLICY_PATH],
                                    outputs={"mean": "/tmp/mean"}))
ex.pipeline_workflow(pipe) # the Hera Workflow; `dihera experiment render|submit FILE.py`
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hera.workflows import Workflow

from dihera.membership import Membership, plan_membership
from dihera.model import DIJob, EnvProvider, FailurePolicy, Task, TaskType
from dihera.pipelines import POLICY_PATH, Pipeline, Step, build_pipeline_workflow
from dihera.render.settings import RenderSettings
from dihera.render.workflow import build_workflow
from dihera.schema import API_VERSION, KIND
from dihera.sweeps import Choice, Goal, Grid, IntRange, LogUniform, Random, Runner, Sweep, Uniform
from dihera.sweeps.space import Dimension, Search, Value
from dihera.sweeps.stopping import MedianStopping, StoppingRule, SuccessiveHalving
from dihera.sweeps.workflow import build_sweep_workflow
from dihera.validation import load_job

__all__ = [
    "POLICY_PATH",
    "choice",
    "dijob",
    "env_provider",
    "grid",
    "int_range",
    "loguniform",
    "median_stopping",
    "pipeline",
    "pipeline_workflow",
    "random_search",
    "step",
    "successive_halving",
    "sweep",
    "sweep_workflow",
    "task",
    "uniform",
    "workflow",
]


def task(
    type: TaskType | str = TaskType.NONE,
    *,
    name: str | None = None,
    replicas: int = 1,
    image: str | None = None,
    command: Sequence[str] | None = None,
    args: Sequence[str] | None = None,
    env: Mapping[str, str] | None = None,
    resources: Mapping[str, object] | None = None,
    template: Mapping[str, object] | None = None,
    env_provider: EnvProvider | str | None = None,
    failure_policy: FailurePolicy | str | None = None,
) -> dict[str, object]:
    """One task entry (``spec.tasks[]``): give ``image`` (and ``command``...) or a whole pod ``template``.

    ``env_provider``: a framework's env for the task (``"torch"`` or :func:`env_provider`).
    ``failure_policy``: ``"FailJob"`` (default) or ``"DropReplica"`` (a replica that exhausted its
    retries leaves the job instead of failing it; docs/controller.md).
    """
    if (template is None) == (image is None):
        raise ValueError("task: give either image (with command, args, env, resources) or template, not both")
    if template is None:
        container: dict[str, object] = {"name": "main", "image": image}
        if command:
            container["command"] = list(command)
        if args:
            container["args"] = list(args)
        if env:
            container["env"] = [{"name": k, "value": v} for k, v in env.items()]
        if resources:
            container["resources"] = dict(resources)
        template = {"spec": {"containers": [container], "restartPolicy": "Never"}}
    entry: dict[str, object] = {"type": TaskType(type).value, "replicas": replicas, "template": dict(template)}
    if name is not None:
        entry["name"] = name
    if env_provider is not None:
        spec = EnvProvider(env_provider) if isinstance(env_provider, str) else env_provider
        entry["envProvider"] = spec.to_dict()
    if failure_policy is not None:
        entry["failurePolicy"] = FailurePolicy(failure_policy).value
    return entry


def env_provider(
    name: str, *, port: int | None = None, role: str | None = None, allow_scaling: bool = False
) -> EnvProvider:
    """``spec.tasks[].envProvider``: ``torch``, ``tensorflow`` or ``mxnet`` (docs/providers.md)."""
    return EnvProvider(name, port=port, role=role, allow_scaling=allow_scaling)


def dijob(
    name: str,
    tasks: Sequence[Mapping[str, object] | Task],
    *,
    namespace: str = "default",
    labels: Mapping[str, str] | None = None,
    **spec: object,
) -> DIJob:
    """A validated :class:`DIJob`; ``spec`` takes the camelCase spec fields (``backoffLimit=0``,
    ``successPolicy={...}``, ``suspend=True``...).

    Raises :class:`~dihera.errors.InvalidJobError` listing every problem.
    """
    entries = [t.to_dict() if isinstance(t, Task) else dict(t) for t in tasks]
    metadata: dict[str, object] = {"name": name, "namespace": namespace}
    if labels:
        metadata["labels"] = dict(labels)
    manifest = {"apiVersion": API_VERSION, "kind": KIND, "metadata": metadata, "spec": {**spec, "tasks": entries}}
    return load_job(manifest, source=f"DIJob {namespace}/{name}")


def workflow(job: DIJob, settings: RenderSettings | None = None, membership: Membership | None = None) -> Workflow:
    """The Hera ``Workflow`` that runs ``job``, to inspect, compose or render (``.to_yaml()``)."""
    return build_workflow(job, membership or plan_membership(job, None), settings or RenderSettings())


def choice(*values: Value) -> Choice:
    """One of ``values`` (a grid runs each)."""
    return Choice(tuple(values))


def int_range(start: int, stop: int, step: int = 1) -> IntRange:
    """The integers ``start, start + step, ...`` below ``stop``."""
    return IntRange(start, stop, step)


def uniform(low: float, high: float) -> Uniform:
    """A float uniform on ``[low, high]`` (random search)."""
    return Uniform(low, high)


def loguniform(low: float, high: float) -> LogUniform:
    """A float log-uniform on ``[low, high]``: learning rates (random search)."""
    return LogUniform(low, high)


def grid() -> Grid:
    """Every combination of the space's (discrete) values."""
    return Grid()


def random_search(count: int, seed: int = 0) -> Random:
    """``count`` configurations drawn with ``random.Random(seed)``."""
    return Random(count, seed)


def median_stopping(min_iterations: int = 1, min_trials: int = 2) -> MedianStopping:
    """Stop a trial whose best metric up to its latest iteration is worse than the median of the other trials'
    best up to that iteration (at least ``min_trials`` of them got there; never before ``min_iterations``)."""
    return MedianStopping(min_iterations, min_trials)


def successive_halving(min_iterations: int = 1, reduction: int = 3, min_trials: int = 2) -> SuccessiveHalving:
    """Asynchronous successive halving: at each rung (``min_iterations · reduction^k`` iterations), stop a
    trial whose best metric up to the rung is outside the best ``1/reduction`` of the trials that reached it
    (at least ``min_trials`` others did)."""
    return SuccessiveHalving(min_iterations, reduction, min_trials)


def sweep(
    name: str,
    job: DIJob,
    space: Mapping[str, Dimension],
    *,
    image: str,
    search: Search | None = None,
    seeds: Sequence[int] = (0,),
    parallelism: int = 1,
    metric: str = "evalReturn",
    goal: Goal | str = Goal.MAXIMIZE,
    queue: str | None = None,
    service_account: str | None = None,
    node_selector: Mapping[str, str] | None = None,
    tolerations: Sequence[Mapping[str, object]] = (),
    early_stopping: StoppingRule | None = None,
    artifacts: bool = False,
    runner: Runner | str = Runner.RESOURCE,
) -> Sweep:
    """``job`` once per trial: each configuration of ``space`` under ``search`` (default: the grid) times
    each of ``seeds``; at most ``parallelism`` trials at a time; ranked by ``status.profilings.<metric>``
    (what the trials report to the di-server). A trial's processes get ``DIHERA_PARAM_<NAME>``,
    ``DIHERA_SEED`` and ``DIHERA_TRIAL``. ``image``: dihera's, for the summary step (and the early-stopping
    daemon). ``early_stopping``: :func:`median_stopping` or :func:`successive_halving`, from the trials'
    ``<metric>History``. ``artifacts``: the summary stores its plot of every trial's metric over iterations
    (SVG) and its tables (Markdown, CSV) as Argo output artifacts (needs Argo's artifact repository).
    ``runner``: ``"resource"`` (a pod per trial node, any Argo) or ``"plugin"`` (no pod per trial: dihera's
    executor plugin creates the DIJobs; docs/experiments.md, "Podless trials").

    Raises :class:`~dihera.sweeps.SweepSpaceError` or :class:`~dihera.errors.InvalidJobError` naming the field.
    """
    return Sweep(
        name=name,
        job=job,
        space=dict(space),
        image=image,
        search=search or Grid(),
        seeds=tuple(seeds),
        parallelism=parallelism,
        metric=metric,
        goal=Goal(goal),
        queue=queue,
        service_account=service_account,
        node_selector=node_selector,
        tolerations=tuple(tolerations),
        early_stopping=early_stopping,
        artifacts=artifacts,
        runner=runner,  # type: ignore[arg-type]  # a str: Sweep checks it (SweepSpaceError naming the field)
    )


def sweep_workflow(sweep: Sweep) -> Workflow:
    """The Hera ``Workflow`` that runs ``sweep`` (``.to_yaml()``, or ``dihera experiment render``)."""
    return build_sweep_workflow(sweep)


def step(
    image: str,
    command: Sequence[str],
    *,
    outputs: Mapping[str, str] | None = None,
    artifacts: Mapping[str, str] | None = None,
    env: Mapping[str, str] | None = None,
    working_dir: str | None = None,
    resources: Mapping[str, object] | None = None,
) -> Step:
    """A pipeline's step after training: ``command`` in ``image`` with the policy at :data:`POLICY_PATH`;
    ``outputs``: output parameters (name -> a file it writes), ``artifacts``: output artifacts (name -> path)."""
    return Step(
        image=image,
        command=tuple(command),
        outputs=dict(outputs or {}),
        artifacts=dict(artifacts or {}),
        env=dict(env or {}),
        working_dir=working_dir,
        resources=dict(resources) if resources else None,
    )


def pipeline(
    name: str,
    job: DIJob,
    *,
    policy: str,
    evaluate: Step,
    image: str,
    export: Step | None = None,
    service_account: str | None = None,
    node_selector: Mapping[str, str] | None = None,
    tolerations: Sequence[Mapping[str, object]] = (),
    locate_timeout: int = 300,
) -> Pipeline:
    """``job`` trained (as DIJob ``<name>-train``), then ``evaluate`` and ``export`` (:func:`step`) run on the
    artifact ``policy`` it stored (a name in its ``spec.artifacts``). ``image``: dihera's, for the step that finds
    the artifact's key. Raises :class:`~dihera.pipelines.PipelineError` naming the field."""
    return Pipeline(
        name=name,
        job=job,
        policy=policy,
        evaluate=evaluate,
        image=image,
        export=export,
        service_account=service_account,
        node_selector=node_selector,
        tolerations=tuple(tolerations),
        locate_timeout=locate_timeout,
    )


def pipeline_workflow(pipeline: Pipeline) -> Workflow:
    """The Hera ``Workflow`` that runs ``pipeline`` (``.to_yaml()``, or ``dihera experiment render``)."""
    return build_pipeline_workflow(pipeline)
