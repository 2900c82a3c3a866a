"""dihera: DI-engine reinforcement-learning jobs (DIJob v2alpha1) on Argo Workflows, rendered with Hera.

Importing dihera is cheap: its public names are loaded on first use (PEP 562), so ``dihera wait-peers``
(every replica's init container) and other light commands never load jsonschema, yaml or Hera; Hera is
loaded by the first :func:`render`, the Kubernetes client only by the modules that talk to the API
(``dihera.kube``).

The pure core (no I/O):

- ``schema``: the DIJob schema and the CRD made from it; ``model``: the typed DIJob; ``validation``: every
  rule, all problems at once (``schema_problems``, ``podtemplate``, ``node_ids``, ``artifacts``, ``reserved``:
  its parts; ``errors``: the error types)
- ``documents``: strict, bounded YAML reading; ``manifests``: deterministic YAML writing
- ``membership``: ranks and indexes of replicas; ``naming``: every name a job creates; ``constants``: the
  API's names; ``objects``: typed views of Kubernetes and Argo objects; ``patches``: JSON patch pieces
- ``render``: the objects a job needs (Hera); ``env_limits``: what Linux can exec; ``argo_ui``: how a job
  reads in the Argo UI
- ``scaling``: a running job's scale, pure; ``queueing``: Kueue's side, pure; ``key_records``: Idempotency-Key
  records; ``convert``: older DIJob shapes to today's; ``peers``: the peer wait of every replica;
  ``profilings``: the bounds of what a job reports into its status; ``rl``: the RL figures a job reports and
  the decisions made from them; ``shapes``: TypedDicts of the raw objects dihera reads
- ``experiment``: building DIJobs, sweeps and pipelines in Python; ``sweeps``: a sweep's space, trials, Workflow
  and results; ``pipelines``: a job trained, its policy evaluated and exported; ``workflow_parts``: what their
  Workflows share; ``submit``: submitting jobs; ``logs``: structured logs

Around it: ``kube`` (the only package that talks to Kubernetes), ``controller``, ``server`` (the
di-server) and ``cli`` (the ``dihera`` command).
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dihera.errors import InvalidJobError, Problem
    from dihera.membership import Membership, Replica, plan_membership
    from dihera.model import CleanPodPolicy, DIJob, Priority, Task, TaskType
    from dihera.render import RenderedJob, RenderSettings, render
    from dihera.validation import apply_defaults, load_job, validate

__all__ = [
    "CleanPodPolicy",
    "DIJob",
    "InvalidJobError",
    "Membership",
    "Priority",
    "Problem",
    "RenderSettings",
    "RenderedJob",
    "Replica",
    "Task",
    "TaskType",
    "apply_defaults",
    "load_job",
    "plan_membership",
    "render",
    "validate",
]

__version__ = "0.1.0"

#: Where each public name lives; loaded on first attribute access (``render`` is the property below).
_LAZY: dict[str, str] = {
    "InvalidJobError": "dihera.errors",
    "Problem": "dihera.errors",
    "Membership": "dihera.membership",
    "Replica": "dihera.membership",
    "plan_membership": "dihera.membership",
    "CleanPodPolicy": "dihera.model",
    "DIJob": "dihera.model",
    "Priority": "dihera.model",
    "Task": "dihera.model",
    "TaskType": "dihera.model",
    "RenderedJob": "dihera.render",
    "RenderSettings": "dihera.render",
    "apply_defaults": "dihera.validation",
    "load_job": "dihera.validation",
    "validate": "dihera.validation",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'dihera' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


class _Package(types.ModuleType):
    """The ``dihera`` module's type: ``dihera.render`` stays the function although a subpackage has that name.

    Loading the subpackage ``dihera.render`` (first done by whichever module needs it, now that nothing is
    loaded eagerly) makes the import system bind it on its parent as ``dihera.render``; this property
    keeps the public function there instead, as the eager imports of the past did.
    """

    @property
    def render(self) -> Any:
        from dihera.render import render

        return render

    @render.setter
    def render(self, value: object) -> None:  # the import system's binding of the subpackage: kept out
        pass


sys.modules[__name__].__class__ = _Package
