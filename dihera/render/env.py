"""The DI_* environment of every container (pure).

Values that differ per replica use Argo input parameters (``{{inputs.parameters.rank}}``), so one
template serves every replica of a task; node lists come from the membership ConfigMap, so the
Workflow never holds a copy of them per replica.
"""

from __future__ import annotations

from typing import Any

from dihera.model import DIJob, Task, task_env_name
from dihera.naming import fqdn, membership_configmap_name
from dihera.render.providers import provider_env
from dihera.render.providers.base import INDEX, RANK
from dihera.render.settings import RenderSettings

__all__ = ["GENERATION_KEY", "INDEX", "MEMBERSHIP_FILE", "NODES_KEY", "RANK", "di_env"]

NODES_KEY = "DI_NODES"
GENERATION_KEY = "DI_MEMBERSHIP_GENERATION"
MEMBERSHIP_FILE = "membership.json"


def _from_membership(job: DIJob, name: str, key: str) -> dict[str, Any]:
    ref = {"name": membership_configmap_name(job.name), "key": key}
    return {"name": name, "valueFrom": {"configMapKeyRef": ref}}


def di_env(job: DIJob, task: Task, settings: RenderSettings, short: bool = False) -> list[dict[str, Any]]:
    """The variables dihera adds to every container of ``task`` (before the user's own); ``short``: in
    the template of the task's short-hostname replicas.

    The task's env provider's variables (docs/providers.md) come last, after the ``DI_*`` ones.
    """
    return [
        {"name": "DI_JOB_ID", "value": job.id},
        {"name": "DI_SERVER_URL", "value": settings.server_url},
        {"name": "DI_RANK", "value": RANK},
        {"name": "DI_TASK_NAME", "value": task.name},
        {"name": "DI_TASK_TYPE", "value": task.type.value},
        {"name": "DI_TASK_RANK", "value": INDEX},
        {"name": "DI_FQDN", "value": fqdn(job.name, job.namespace, task.name, INDEX, settings.cluster_domain, short)},
        _from_membership(job, NODES_KEY, NODES_KEY),
        *(_from_membership(job, task_env_name(t.name), task_env_name(t.name)) for t in job.tasks),
        _from_membership(job, GENERATION_KEY, GENERATION_KEY),
        {"name": "DI_MEMBERSHIP_FILE", "value": f"{settings.membership_dir}/{MEMBERSHIP_FILE}"},
        *provider_env(job, task, settings),
    ]
