"""A sweep (pure): one DIJob template run once per trial, each trial a DIJob of its own.

How a trial's values reach its processes: **environment variables** on every container of every task,
``DIHERA_PARAM_<NAME>`` (the value as text: ``0.001``, ``3``, ``true``, ``adam``), ``DIHERA_SEED`` and
``DIHERA_TRIAL``. Environment variables need no file or ConfigMap to create and clean up, every program
and language reads them, ``kubectl describe`` and the Argo UI show them, and Kubernetes expands
``$(DIHERA_PARAM_LR)`` in a container's ``command``/``args`` for programs that take flags. DI-engine's
configs are Python: a main reads ``os.environ`` to override e.g. ``policy.learn.learning_rate``
(workflows/python/cartpole_sweep.py).

Each trial's DIJob is named ``<sweep>-t<index>``, labelled ``diengine/experiment: <sweep>`` and
``diengine/trial: <index>`` (and Kueue's queue label when the sweep names a queue), and annotated with its
values (``diengine/param.<name>``) and seed (``diengine/seed``): ``kubectl get dijob -l
diengine/experiment=NAME`` lists a sweep's trials, and its summary reads them back from there.
"""

from __future__ import annotations

import copy
import enum
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from dihera.constants import LABEL_EXPERIMENT, LABEL_GOAL, LABEL_METRIC, LABEL_QUEUE_NAME, LABEL_TRIAL_POD
from dihera.model import DIJob
from dihera.shapes.dijob import DIJobObject
from dihera.shapes.json_types import JsonObject, JsonValue
from dihera.sweeps.results import Goal
from dihera.sweeps.space import Dimension, Grid, Search, SweepSpaceError, Trial, Value, plan_trials
from dihera.sweeps.stopping import ANNOTATION_STOPPED, StoppingRule
from dihera.validation import load_job

__all__ = [
    "ANNOTATION_CONFIGURATION",
    "ANNOTATION_PARAM_PREFIX",
    "ANNOTATION_SEED",
    "ANNOTATION_STOPPED",
    "ENV_PARAM_PREFIX",
    "LABEL_EXPERIMENT",
    "LABEL_GOAL",
    "LABEL_METRIC",
    "LABEL_TRIAL",
    "Runner",
    "Sweep",
    "parse_value",
    "value_text",
]

LABEL_TRIAL = "diengine/trial"
ANNOTATION_PARAM_PREFIX = "diengine/param."
ANNOTATION_SEED = "diengine/seed"
#: On a trial's DIJob: the index of its configuration (trials of one configuration differ by seed only).
ANNOTATION_CONFIGURATION = "diengine/configuration"
ENV_PARAM_PREFIX = "DIHERA_PARAM_"
ENV_SEED = "DIHERA_SEED"
ENV_TRIAL = "DIHERA_TRIAL"
#: A sweep's name: the Workflow's, and the prefix of its trials' DIJob names.
SWEEP_NAME = re.compile(r"^[a-z]([-a-z0-9]{0,30}[a-z0-9])?$")
#: A metric: a key of the trials' ``status.profilings`` (what their processes report to the di-server); also
#: a label value on the Workflow (``diengine/metric``) and an output parameter of each trial node.
METRIC_NAME = re.compile(r"^[A-Za-z]([A-Za-z0-9_]{0,60}[A-Za-z0-9])?$")
#: The trial node's own output parameter: not a metric's name.
_RESERVED_METRICS = frozenset({"phase"})
LABEL_VALUE = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
#: What a string value may hold: it is substituted by Argo into a JSON document.
_SAFE_TEXT = re.compile(r'^[^"\\\'{}\n\r\t]{0,200}$')


def value_text(value: Value) -> str:
    """A value as its processes see it (``DIHERA_PARAM_*``) and as its DIJob's annotation records it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


_INT = re.compile(r"^-?[0-9]+$")
_FLOAT = re.compile(r"^-?([0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)(e[-+]?[0-9]+)?$")


def parse_value(text: str) -> Value:
    """:func:`value_text`'s inverse for numbers and bools; any other text (``1_000``, ``nan``) stays a string."""
    if text in ("true", "false"):
        return text == "true"
    if _INT.match(text):
        return int(text)
    if _FLOAT.match(text):
        return float(text)
    return text


class Runner(enum.StrEnum):
    """What runs a trial node. ``resource``: an Argo resource template, a pod per trial that creates the DIJob
    and waits for it (any Argo; the template's ``parallelism`` bounds the trials). ``plugin``: dihera's executor
    plugin in the Workflow's agent pod, no pod per trial (needs ``ARGO_EXECUTOR_PLUGINS=true`` and
    :func:`dihera.sweeps.plugin.plugin_manifests` in the namespace; the plugin bounds the trials)."""

    RESOURCE = "resource"
    PLUGIN = "plugin"


@dataclass(frozen=True)
class Sweep:
    """``job`` once per trial of ``space`` under ``search``, repeated over ``seeds``, at most ``parallelism``
    trials at a time, ranked by ``status.profilings.<metric>`` of the trials' DIJobs (``goal``);
    ``early_stopping``: stop (suspend) the trials that cannot win, from their ``<metric>History``.

    ``queue``: the Kueue LocalQueue of the trials. ``image``: dihera's image, which runs the summary step.
    ``service_account``, ``node_selector``, ``tolerations``: of the experiment's own pods (the trials' creators
    and the summary); the ServiceAccount may create, get and list DIJobs (docs/experiments.md).
    ``artifacts``: the summary also stores its plot and tables as Argo output artifacts (needs an artifact
    repository configured in Argo; without one the summary node fails, so it is opt-in).
    ``runner``: what runs a trial node (:class:`Runner`; docs/experiments.md, "Podless trials").
    """

    name: str
    job: DIJob
    space: Mapping[str, Dimension]
    image: str
    search: Search = field(default_factory=Grid)
    seeds: Sequence[int] = (0,)
    parallelism: int = 1
    metric: str = "evalReturn"
    goal: Goal = Goal.MAXIMIZE
    queue: str | None = None
    service_account: str | None = None
    node_selector: Mapping[str, str] | None = None
    tolerations: Sequence[Mapping[str, object]] = ()
    early_stopping: StoppingRule | None = None
    artifacts: bool = False
    runner: Runner = Runner.RESOURCE

    def __post_init__(self) -> None:
        if not SWEEP_NAME.match(self.name):
            raise SweepSpaceError(f"name: {self.name!r} must match {SWEEP_NAME.pattern} (trials: <name>-t<index>)")
        if not METRIC_NAME.match(self.metric) or self.metric in _RESERVED_METRICS:
            raise SweepSpaceError(f"metric: {self.metric!r} must match {METRIC_NAME.pattern} (a status.profilings key)")
        if self.queue is not None and not LABEL_VALUE.match(self.queue):
            raise SweepSpaceError(f"queue: {self.queue!r} is not a label value (a Kueue LocalQueue's name)")
        if self.queue is not None and self.early_stopping is not None:
            raise SweepSpaceError(
                f"early_stopping with queue {self.queue!r}: a stopped trial is suspended, and a suspended job keeps "
                "its Kueue quota (docs/queueing.md): later trials could wait for ever; give one or the other"
            )
        if self.parallelism < 1:
            raise SweepSpaceError(f"parallelism: {self.parallelism} must be at least 1")
        object.__setattr__(self, "goal", Goal(self.goal))
        try:
            object.__setattr__(self, "runner", Runner(self.runner))
        except ValueError:
            raise SweepSpaceError(f"runner: {self.runner!r} must be one of {[r.value for r in Runner]}") from None
        for trial in self.trials:
            for name, value in trial.values.items():
                if isinstance(value, str) and not _SAFE_TEXT.match(value):
                    raise SweepSpaceError(f"space.{name}: {value!r}: quotes, braces, backslashes, newlines are refused")
            load_job(self.trial_manifest(trial), source=f"sweep {self.name}, trial {trial.index}")

    @cached_property
    def trials(self) -> list[Trial]:
        return plan_trials(self.space, self.search, list(self.seeds))

    @property
    def namespace(self) -> str:
        return self.job.namespace

    def trial_name(self, index: int) -> str:
        width = max(2, len(str(len(self.trials) - 1)))
        return f"{self.name}-t{index:0{width}d}"

    def trial_manifest(self, trial: Trial) -> DIJobObject:
        """The DIJob of ``trial``: ``job`` with the trial's name, labels, annotations and environment."""
        texts = {name: value_text(v) for name, v in trial.values.items()}
        config = str(trial.index // len(self.seeds))
        return self._manifest(self.trial_name(trial.index), str(trial.index), texts, str(trial.seed), config)

    def _manifest(
        self, job_name: str, index: str, texts: Mapping[str, str], seed: str, config: str, pod: str | None = None
    ) -> DIJobObject:
        """``job`` for one trial; the arguments may be Argo placeholders (the Workflow's one trial template).
        ``pod``: the creating pod's name (labelled :data:`LABEL_TRIAL_POD`; only the Workflow knows it)."""
        manifest = copy.deepcopy(self.job.to_manifest())
        meta = manifest["metadata"]
        meta["name"] = job_name
        meta["labels"] = {**meta.get("labels", {}), LABEL_EXPERIMENT: self.name, LABEL_TRIAL: index}
        if pod is not None:
            meta["labels"][LABEL_TRIAL_POD] = pod
        if self.queue is not None:
            meta["labels"][LABEL_QUEUE_NAME] = self.queue
        annotations = {f"{ANNOTATION_PARAM_PREFIX}{name}": text for name, text in texts.items()}
        meta["annotations"] = {
            **meta.get("annotations", {}),
            **annotations,
            ANNOTATION_SEED: seed,
            ANNOTATION_CONFIGURATION: config,
        }
        manifest["spec"].pop("suspend", None)  # a trial starts at once (a suspended trial counts as stopped)
        env: list[JsonValue] = [{"name": f"{ENV_PARAM_PREFIX}{name.upper()}", "value": t} for name, t in texts.items()]
        env += [{"name": ENV_SEED, "value": seed}, {"name": ENV_TRIAL, "value": index}]
        ours = {f"{ENV_PARAM_PREFIX}{name.upper()}" for name in texts} | {ENV_SEED, ENV_TRIAL}
        for task in manifest["spec"]["tasks"]:
            for container in _containers(task["template"]["spec"]):
                given = [e for e in _list(container.get("env", [])) if not (isinstance(e, dict) and e["name"] in ours)]
                container["env"] = [*given, *env]
        return manifest

    def template_manifest(self, placeholders: Mapping[str, str]) -> DIJobObject:
        """The trial DIJob with Argo input placeholders: ``placeholders`` maps ``job``, ``trial``, ``seed``,
        ``configuration``, each parameter's name and, optionally, ``pod`` to the text Argo substitutes."""
        texts = {name: placeholders[name] for name in self.space}
        return self._manifest(
            placeholders["job"],
            placeholders["trial"],
            texts,
            placeholders["seed"],
            placeholders["configuration"],
            placeholders.get("pod"),
        )


def _list(value: JsonValue) -> list[JsonValue]:
    """A JSON array (a pod spec's containers, a container's env); anything else is a malformed template."""
    if not isinstance(value, list):
        raise TypeError(f"expected a list, got {value!r}")
    return value


def _containers(pod_spec: JsonObject) -> list[JsonObject]:
    """A pod spec's init containers and containers (the objects themselves, to edit in place)."""
    found = [*_list(pod_spec.get("initContainers", [])), *_list(pod_spec["containers"])]
    return [c for c in found if isinstance(c, dict)]
