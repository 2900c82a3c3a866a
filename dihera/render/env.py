"""A replica's environment, all of it (pure): the ``DI_*`` variables of every container and init container,
where each value comes from, and the values of the node lists.

- :func:`di_env`: the variables, in order, then the task's env provider's (``TF_CONFIG``, ``MASTER_ADDR``...;
  :mod:`dihera.render.providers`). Values that differ per replica are Argo input parameters
  (``{{inputs.parameters.rank}}``), so one template serves every replica of a task.
- :func:`membership_lists`: ``DI_NODES`` and every ``DI_<TASK>_NODES`` (:func:`node_lists`), with the
  providers' keys, as the membership ConfigMap holds them (the pods read them from there, so the Workflow
  never holds a copy per replica), in the longest address form Linux still execs.
- :func:`shorten_fqdn`: ``DI_FQDN`` of a replica with a short hostname (a job past ~2,000 replicas).
"""

from __future__ import annotations

from typing import Any

from dihera.constants import CHECKPOINT_DIR_ENV, VACANT_RANK_ADDRESS
from dihera.env_limits import value_fits
from dihera.membership import Membership, Replica
from dihera.model import DIJob, Task, task_env_name
from dihera.naming import Addressing, fqdn, member_address, membership_configmap_name
from dihera.render.providers import membership_data, provider_env
from dihera.render.providers.base import INDEX, RANK
from dihera.render.settings import RenderSettings

__all__ = [
    "GENERATION_KEY",
    "INDEX",
    "MEMBERSHIP_FILE",
    "NODES_KEY",
    "RANK",
    "RESTART_KEY",
    "SERVER_CA_KEY",
    "di_env",
    "membership_lists",
    "node_lists",
    "shorten_fqdn",
]

NODES_KEY = "DI_NODES"
GENERATION_KEY = "DI_MEMBERSHIP_GENERATION"
MEMBERSHIP_FILE = "membership.json"
#: How many times the replica was restarted in place (0 for its first pod): Argo's retry number of the node,
#: ``{{retries}}``, which only a template with a retryStrategy (``backoffLimit`` > 0) resolves.
RESTART_KEY = "DI_RESTART_COUNT"
#: The certificates (PEM) that sign the di-server's HTTPS certificate, when the controller knows them.
SERVER_CA_KEY = "DI_SERVER_CA"
RETRIES = "{{retries}}"


def _from_membership(job: DIJob, name: str, key: str) -> dict[str, Any]:
    ref = {"name": membership_configmap_name(job.name), "key": key}
    return {"name": name, "valueFrom": {"configMapKeyRef": ref}}


def _checkpoint_env(job: DIJob, task: Task) -> list[dict[str, object]]:
    """``DI_CHECKPOINT_DIR=<mountPath>/<task>-<index>``: the replica's own directory in the checkpoint volume,
    in the tasks that mount it (``spec.checkpoint``, :mod:`dihera.render.checkpoint`)."""
    if job.checkpoint is None or not job.checkpoint.mounted_by(task.name):
        return []
    return [{"name": CHECKPOINT_DIR_ENV, "value": f"{job.checkpoint.mount_path.rstrip('/')}/{task.name}-{INDEX}"}]


def di_env(job: DIJob, task: Task, settings: RenderSettings, short: bool = False) -> list[dict[str, Any]]:
    """The variables dihera adds to every container of ``task`` (before the user's own); ``short``: in
    the template of the task's short-hostname replicas.

    The task's env provider's variables (docs/providers.md) come last, after the ``DI_*`` ones.
    """
    return [
        {"name": "DI_JOB_ID", "value": job.id},
        {"name": "DI_SERVER_URL", "value": settings.server_url},
        *([{"name": SERVER_CA_KEY, "value": settings.server_ca}] if settings.server_ca else []),
        {"name": "DI_RANK", "value": RANK},
        {"name": "DI_TASK_NAME", "value": task.name},
        {"name": "DI_TASK_TYPE", "value": task.type.value},
        {"name": "DI_TASK_RANK", "value": INDEX},
        {"name": "DI_FQDN", "value": fqdn(job.name, job.namespace, task.name, INDEX, settings.cluster_domain, short)},
        _from_membership(job, NODES_KEY, NODES_KEY),
        *(_from_membership(job, task_env_name(t.name), task_env_name(t.name)) for t in job.tasks),
        _from_membership(job, GENERATION_KEY, GENERATION_KEY),
        {"name": "DI_MEMBERSHIP_FILE", "value": f"{settings.membership_dir}/{MEMBERSHIP_FILE}"},
        {"name": RESTART_KEY, "value": RETRIES if job.backoff_limit > 0 else "0"},
        *_checkpoint_env(job, task),
        *provider_env(job, task, settings),
    ]


def node_lists(
    job: DIJob, membership: Membership, settings: RenderSettings, form: Addressing = Addressing.FQDN
) -> dict[str, str]:
    """``DI_NODES`` and every ``DI_<TASK>_NODES``, comma-joined replica names in ``form``, in rank order.

    In ``DI_NODES`` the entry at position r is rank r's name, so ``DI_NODES[DI_RANK]`` is the pod's
    own address; a rank left vacant by a scale-down holds :data:`VACANT_RANK_ADDRESS` (an address
    that refuses DI-engine's dial instead of breaking it); a running job's scale-up never refills it
    (:func:`dihera.membership.ranks_after`), a Workflow created anew may.
    """

    def address(r: Replica) -> str:
        return member_address(job.name, job.namespace, r.task, r.index, settings.cluster_domain, form, r.short)

    top = max((r.rank for r in membership.replicas), default=-1)
    by_rank = [VACANT_RANK_ADDRESS] * (top + 1)
    for r in membership.replicas:
        by_rank[r.rank] = address(r)
    lists = {NODES_KEY: ",".join(by_rank)}
    for task in job.tasks:
        lists[task_env_name(task.name)] = ",".join(address(r) for r in membership.of_task(task.name))
    return lists


def membership_lists(job: DIJob, membership: Membership, settings: RenderSettings) -> tuple[Addressing, dict[str, str]]:
    """The node lists and the env providers' keys, in the longest :class:`Addressing` form whose every
    value still becomes an environment string Linux execs (:func:`~dihera.env_limits.value_fits`).

    FQDNs (DI-orchestrator's form) while they fit; a job too large for them gets shorter names
    that resolve to the same pods. Validation refuses a job for which even bare hostnames would
    not fit (:func:`~dihera.env_limits.membership_env_bound`), so the last form always does.
    """
    forms = list(Addressing)
    for form in forms:
        data = node_lists(job, membership, settings, form)
        data.update(membership_data(job, membership, settings, form))  # env providers' keys (WORLD_SIZE, TF_CLUSTER...)
        if all(value_fits(v) for v in data.values()):
            break
    return form, data


def shorten_fqdn(containers: list[dict[str, Any]], long_host: str, short_host: str) -> None:
    """``DI_FQDN`` of every container of a replica whose hostname is ``short_host`` instead of ``long_host``
    (in place): the same domain under the short hostname."""
    for container in containers:
        for var in container.get("env") or []:
            if var.get("name") == "DI_FQDN" and str(var.get("value", "")).startswith(f"{long_host}."):
                var["value"] = short_host + str(var["value"])[len(long_host) :]
