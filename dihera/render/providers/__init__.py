"""Env providers: a framework's distributed-training environment for a task (pure).

A task chooses one with ``spec.tasks[].envProvider.name``. The registry maps that name to a
:class:`~dihera.render.providers.base.Provider`; adding a framework is one module here and one
line in :data:`PROVIDERS` (and the name in the schema's enum; a test checks they agree).
See docs/providers.md.

- ``base``: what a provider is; ``torch``, ``tensorflow``, ``mxnet``: one module per framework
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from dihera.errors import Problem
from dihera.membership import Membership
from dihera.model import DIJob, EnvProvider, Task
from dihera.naming import Addressing
from dihera.render.providers import mxnet, tensorflow, torch
from dihera.render.providers.base import Provider, ProviderTask
from dihera.render.settings import RenderSettings

__all__ = [
    "PROVIDERS",
    "Provider",
    "ProviderTask",
    "membership_data",
    "parse_env_provider",
    "provider_env",
    "provider_ports",
    "provider_problems",
    "scaling_refusal",
]

PROVIDERS: Mapping[str, Provider] = {p.name: p for p in (torch.PROVIDER, tensorflow.PROVIDER, mxnet.PROVIDER)}


def parse_env_provider(entry: object) -> EnvProvider | None:
    """The typed ``envProvider`` of a (validated, defaulted) task entry, or None."""
    if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
        return None  # the schema reports it
    port, role = entry.get("port"), entry.get("role")
    return EnvProvider(
        name=entry["name"],
        port=port if isinstance(port, int) and not isinstance(port, bool) else None,
        role=role if isinstance(role, str) else None,
        allow_scaling=bool(entry.get("allowScaling", False)),
    )


def _provider(task: Task) -> Provider | None:
    return PROVIDERS[task.env_provider.name] if task.env_provider is not None else None


def provider_env(job: DIJob, task: Task, settings: RenderSettings) -> list[dict[str, object]]:
    """The variables ``task``'s provider adds to each of its containers ([] without one)."""
    provider = _provider(task)
    return provider.env(job, task, settings) if provider else []


def provider_ports(task: Task) -> list[dict[str, object]]:
    """The container ports ``task``'s provider declares on its first container."""
    provider = _provider(task)
    return provider.ports(task) if provider else []


def membership_data(
    job: DIJob, membership: Membership, settings: RenderSettings, form: Addressing = Addressing.FQDN
) -> dict[str, str]:
    """The keys every provider used by ``job`` adds to the membership ConfigMap, replicas named in ``form``."""
    used = sorted({t.env_provider.name for t in job.tasks if t.env_provider is not None})
    data: dict[str, str] = {}
    for name in used:
        data.update(PROVIDERS[name].membership_data(job, membership, settings, form))
    return data


def provider_problems(tasks: Sequence[object]) -> list[Problem]:
    """Every provider rule broken by a (defaulted) ``spec.tasks`` list; unknown names are the schema's."""
    by_provider: dict[str, list[ProviderTask]] = {}
    for i, t in enumerate(tasks):
        if not isinstance(t, Mapping) or not isinstance(t.get("envProvider"), Mapping):
            continue
        spec = parse_env_provider(t["envProvider"])
        if spec is None or spec.name not in PROVIDERS or not isinstance(t.get("name"), str):
            continue
        replicas = t.get("replicas", 1)
        by_provider.setdefault(spec.name, []).append(
            ProviderTask(f"spec.tasks[{i}].envProvider", t["name"], replicas if isinstance(replicas, int) else 1, spec)
        )
    problems: list[Problem] = []
    for name, entries in sorted(by_provider.items()):
        problems += PROVIDERS[name].check(entries)
    return problems


def scaling_refusal(job: DIJob, current: Mapping[str, int], counts: Mapping[str, int]) -> str | None:
    """Why changing ``current`` counts to ``counts`` is refused (a provider task without allowScaling)."""
    for i, t in enumerate(job.tasks):
        spec = t.env_provider
        if spec is None or spec.allow_scaling or current.get(t.name) == counts.get(t.name):
            continue
        return (
            f"spec.tasks[{i}].replicas: task {t.name!r} uses the {spec.name} env provider, whose group cannot "
            f"grow or shrink in place ({current.get(t.name)} -> {counts.get(t.name)} refused; nothing changed). "
            f"Set spec.tasks[{i}].envProvider.allowScaling: true to scale it anyway (see docs/providers.md)"
        )
    return None
