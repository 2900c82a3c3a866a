"""``mxnet``: the ``DMLC_*`` variables of MXNet's parameter server, as Kubeflow's MXJob gives them.

Every task using the provider is one role: its ``envProvider.role``, else its name when the name is
a role (``scheduler``, ``server``, ``worker``). Exactly one scheduler task, of 1 replica. Every
replica gets ``DMLC_ROLE`` (its task's role), ``DMLC_PS_ROOT_URI`` (the scheduler's FQDN),
``DMLC_PS_ROOT_PORT`` (the scheduler task's port, default 9091), ``DMLC_NUM_SERVER`` and
``DMLC_NUM_WORKER`` (live replicas of the server and worker tasks, from the membership ConfigMap).
"""

from __future__ import annotations

from collections.abc import Sequence

from dihera.errors import Problem
from dihera.membership import Membership
from dihera.model import DIJob, Task
from dihera.naming import Addressing
from dihera.render.providers.base import (
    Env,
    Provider,
    ProviderTask,
    address,
    config_ref,
    counts_by_role,
    literal,
    role_problems,
    single_replica_problems,
    tasks_with,
)
from dihera.render.settings import RenderSettings

__all__ = ["PROVIDER"]

DEFAULT_PORT = 9091
COUNT_KEYS = {"server": "DMLC_NUM_SERVER", "worker": "DMLC_NUM_WORKER"}


def _scheduler(job: DIJob) -> Task:
    for t in tasks_with(job, "mxnet"):
        assert t.env_provider is not None
        if PROVIDER.role(t.name, t.env_provider) == "scheduler":
            return t
    raise ValueError(f"job {job.id}: an mxnet job needs a scheduler task")  # validation refuses this first


def _env(job: DIJob, task: Task, settings: RenderSettings) -> Env:
    assert task.env_provider is not None
    scheduler = _scheduler(job)
    assert scheduler.env_provider is not None
    return [
        literal("DMLC_ROLE", PROVIDER.role(task.name, task.env_provider) or ""),
        literal("DMLC_PS_ROOT_URI", address(job, scheduler.name, 0, settings)),
        literal("DMLC_PS_ROOT_PORT", PROVIDER.port(scheduler.env_provider)),
        *(config_ref(job, key, key) for key in COUNT_KEYS.values()),
    ]


def _membership_data(job: DIJob, membership: Membership, settings: RenderSettings, form: Addressing) -> dict[str, str]:
    del settings, form
    if not tasks_with(job, "mxnet"):
        return {}
    counts = counts_by_role(PROVIDER, job, membership)
    return {key: str(counts.get(role, 0)) for role, key in COUNT_KEYS.items()}


def _check(tasks: Sequence[ProviderTask]) -> list[Problem]:
    problems = role_problems(PROVIDER, tasks) + single_replica_problems(PROVIDER, tasks, ("scheduler",))
    if tasks and not any(PROVIDER.role(t.task, t.spec) == "scheduler" for t in tasks):
        problems.append(
            Problem(
                "spec.tasks",
                "an mxnet job needs one task with the scheduler role (named scheduler, or envProvider.role: scheduler)",
            )
        )
    return problems


PROVIDER = Provider(
    name="mxnet",
    default_port=DEFAULT_PORT,
    roles=("scheduler", "server", "worker"),
    env=_env,
    membership_data=_membership_data,
    check=_check,
    port_name="mxnet-port",
)
