"""dihera: DI-engine reinforcement-learning jobs (DIJob v2alpha1) on Argo Workflows, rendered with Hera.

Importing dihera is cheap: Hera is loaded by the first :func:`render`, the Kubernetes client only by
the modules that talk to the API (``dihera.kube``).
"""

from __future__ import annotations

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
