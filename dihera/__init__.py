"""dihera: DI-engine reinforcement-learning jobs (DIJob v2alpha1) on Argo Workflows, rendered with Hera.

Importing dihera is cheap: the validator and the other public names load on first use (PEP 562), so
``dihera wait-peers`` and ``dihera crd`` load no validator; Hera loads with the first :func:`render`, the
Kubernetes client only with the modules that talk to the API (``dihera.kube``). :func:`render` itself is
bound at import: it shares its name with the package :mod:`dihera.render`, which would otherwise hide it
once imported.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from dihera.render import RenderedJob, RenderSettings, render

if TYPE_CHECKING:
    from dihera.errors import InvalidJobError, Problem
    from dihera.membership import Membership, Replica, plan_membership
    from dihera.model import CleanPodPolicy, DIJob, Priority, Task, TaskType
    from dihera.validation import apply_defaults, load_job, validate

#: Where each public name lives.
_HOMES = {
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
    "apply_defaults": "dihera.validation",
    "load_job": "dihera.validation",
    "validate": "dihera.validation",
}

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


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'dihera' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
