"""``torch``: torch.distributed's env:// rendezvous, as Kubeflow's PyTorchJob gives it.

For every replica of the task: ``MASTER_ADDR`` = FQDN of the task's replica 0, ``MASTER_PORT``
(default 29500), ``WORLD_SIZE`` = the task's live replicas (from the membership ConfigMap),
``RANK`` = the replica's index in its task, ``LOCAL_RANK`` = 0 (one process per pod).
"""

from __future__ import annotations

from collections.abc import Sequence

from dihera.errors import Problem
from dihera.membership import Membership
from dihera.model import DIJob, Task
from dihera.naming import Addressing
from dihera.render.providers.base import (
    INDEX,
    Env,
    Provider,
    ProviderTask,
    address,
    config_ref,
    data_key,
    literal,
    role_problems,
    tasks_with,
)
from dihera.render.settings import RenderSettings

__all__ = ["PROVIDER"]

DEFAULT_PORT = 29500


def _world_size_key(task: str) -> str:
    return data_key("torch", task, "world_size")


def _env(job: DIJob, task: Task, settings: RenderSettings) -> Env:
    assert task.env_provider is not None
    return [
        literal("MASTER_ADDR", address(job, task.name, 0, settings)),
        literal("MASTER_PORT", PROVIDER.port(task.env_provider)),
        config_ref(job, "WORLD_SIZE", _world_size_key(task.name)),
        literal("RANK", INDEX),
        literal("LOCAL_RANK", 0),
    ]


def _membership_data(job: DIJob, membership: Membership, settings: RenderSettings, form: Addressing) -> dict[str, str]:
    del settings, form
    return {_world_size_key(t.name): str(len(membership.of_task(t.name))) for t in tasks_with(job, "torch")}


def _check(tasks: Sequence[ProviderTask]) -> list[Problem]:
    return role_problems(PROVIDER, tasks)


PROVIDER = Provider(
    name="torch",
    default_port=DEFAULT_PORT,
    roles=(),
    env=_env,
    membership_data=_membership_data,
    check=_check,
    port_name="torch-master",
)
