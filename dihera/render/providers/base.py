"""What an env provider is: pure functions from the job, its task and its membership to env and ports.

A provider renders, for one task's template (shared by every replica of the task):

- ``env``: variables added after the ``DI_*`` ones. A value that differs per replica uses the
  template's Argo parameters (:data:`INDEX`, :data:`RANK`); a value that depends on the membership
  is a ``configMapKeyRef`` to a key the provider adds to the membership ConfigMap, so it follows
  scaling for pods started after it (a variable may also combine earlier ones with ``$(NAME)``);
- ``ports``: container ports declared on the task's first container;
- ``membership_data``: the keys it adds to the membership ConfigMap, from the live membership, with
  replicas named in the given :class:`~dihera.naming.Addressing` form;
- ``check``: job-wide rules (roles, counts) as problems naming the field.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from dihera.errors import Problem
from dihera.membership import Membership
from dihera.model import DIJob, EnvProvider, Task
from dihera.naming import Addressing, fqdn, membership_configmap_name
from dihera.naming import member_address as _member_address
from dihera.render.settings import RenderSettings

__all__ = [
    "INDEX",
    "RANK",
    "Env",
    "Provider",
    "ProviderTask",
    "address",
    "config_ref",
    "counts_by_role",
    "data_key",
    "literal",
    "member_address",
    "role_of",
    "role_problems",
    "single_replica_problems",
    "tasks_with",
]

INDEX = "{{inputs.parameters.index}}"
RANK = "{{inputs.parameters.rank}}"


@dataclass(frozen=True)
class ProviderTask:
    """A task that names a provider, as validation sees it (before a typed job exists)."""

    path: str  # ``spec.tasks[i].envProvider``
    task: str
    replicas: int
    spec: EnvProvider


Env = list[dict[str, object]]


@dataclass(frozen=True)
class Provider:
    """One framework's environment. ``roles``: the roles a task may take (empty: none)."""

    name: str
    default_port: int
    roles: tuple[str, ...]
    env: Callable[[DIJob, Task, RenderSettings], Env]
    membership_data: Callable[[DIJob, Membership, RenderSettings, Addressing], dict[str, str]]
    check: Callable[[Sequence[ProviderTask]], list[Problem]]
    port_name: str

    def port(self, spec: EnvProvider) -> int:
        return spec.port if spec.port is not None else self.default_port

    def role(self, task_name: str, spec: EnvProvider) -> str | None:
        """The task's role: ``spec.role``, else the task name if it is a role, else None."""
        if spec.role is not None:
            return spec.role
        return task_name if task_name in self.roles else None

    def ports(self, task: Task) -> list[dict[str, object]]:
        assert task.env_provider is not None
        return [{"name": self.port_name, "containerPort": self.port(task.env_provider), "protocol": "TCP"}]


def literal(name: str, value: str | int) -> dict[str, object]:
    return {"name": name, "value": str(value)}


def data_key(*parts: str) -> str:
    """A membership ConfigMap key: parts upper-cased, ``-`` becomes ``_``, joined by ``_``."""
    return "_".join(p.upper().replace("-", "_") for p in parts)


def config_ref(job: DIJob, name: str, key: str) -> dict[str, object]:
    """A variable read from the membership ConfigMap when the container starts."""
    return {"name": name, "valueFrom": {"configMapKeyRef": {"name": membership_configmap_name(job.name), "key": key}}}


def address(job: DIJob, task: str, index: int | str, settings: RenderSettings) -> str:
    """One replica's FQDN (a single address in the env, such as MASTER_ADDR)."""
    return fqdn(job.name, job.namespace, task, index, settings.cluster_domain)


def member_address(
    job: DIJob, task: str, index: int | str, settings: RenderSettings, form: Addressing, short: bool = False
) -> str:
    """A replica in a membership list, in the form the ConfigMap uses (:class:`~dihera.naming.Addressing`);
    ``short``: the replica has a short hostname."""
    return _member_address(job.name, job.namespace, task, index, settings.cluster_domain, form, short)


def tasks_with(job: DIJob, provider: str) -> list[Task]:
    """The job's tasks that use ``provider``, in spec order."""
    return [t for t in job.tasks if t.env_provider is not None and t.env_provider.name == provider]


def role_of(provider: Provider, t: ProviderTask) -> str | None:
    return provider.role(t.task, t.spec)


def counts_by_role(provider: Provider, job: DIJob, membership: Membership) -> Mapping[str, int]:
    """Live replicas per role, over the job's tasks using ``provider``."""
    out: dict[str, int] = {}
    for t in tasks_with(job, provider.name):
        assert t.env_provider is not None
        role = provider.role(t.name, t.env_provider)
        if role is not None:
            out[role] = out.get(role, 0) + len(membership.of_task(t.name))
    return out


def role_problems(provider: Provider, tasks: Sequence[ProviderTask]) -> list[Problem]:
    """Each task has one valid role (torch: none), and no two tasks share one."""
    problems = []
    valid = ", ".join(provider.roles)
    seen: dict[str, str] = {}
    for t in tasks:
        if not provider.roles:
            if t.spec.role is not None:
                problems.append(
                    Problem(f"{t.path}.role", f"{t.spec.role!r} is not valid: {provider.name} takes no role")
                )
            continue
        if t.spec.role is not None and t.spec.role not in provider.roles:
            problems.append(Problem(f"{t.path}.role", f"{t.spec.role!r} is not a {provider.name} role; valid: {valid}"))
            continue
        role = provider.role(t.task, t.spec)
        if role is None:
            problems.append(
                Problem(
                    f"{t.path}.role",
                    f"is required: the task name {t.task!r} is not a {provider.name} role; give one of {valid}",
                )
            )
        elif role in seen:
            problems.append(
                Problem(f"{t.path}.role", f"{role!r} is already the role of task {seen[role]!r}; one task per role")
            )
        else:
            seen[role] = t.task
    return problems


def single_replica_problems(provider: Provider, tasks: Sequence[ProviderTask], roles: Sequence[str]) -> list[Problem]:
    """Tasks whose role runs once (a TF chief, the MXNet scheduler) have 1 replica."""
    return [
        Problem(
            f"{t.path.rsplit('.', 1)[0]}.replicas",
            f"{t.replicas} is not valid: the {provider.name} {role} runs as exactly 1 replica",
        )
        for t in tasks
        if (role := role_of(provider, t)) in roles and t.replicas != 1
    ]
