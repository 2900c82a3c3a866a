"""The names a job makes, and their sizes (pure): the job's name, its pods' hostnames, the short hostnames.

The job's name names its pods, a Service and a Workflow: a DNS label. A replica's hostname
``<job>-<task>-<index>`` is a DNS label of at most :data:`MAX_HOSTNAME` characters (the twin of a CEL rule of
the CRD, :mod:`dihera.validation.cel`). No task may take a name that would make two replicas' hostnames, or two
Workflow templates, the same (docs/rendering.md, "Names in the node lists"). The size of the environment these
names fill is :mod:`dihera.env_limits`'; the names dihera adds to every pod are :mod:`dihera.reserved`'.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from dihera.errors import Problem
from dihera.naming import SHORT_TEMPLATE_SUFFIX
from dihera.validation.structure import Defaulted, obj

__all__ = ["MAX_HOSTNAME", "cel_hostname_length", "job_name_problems", "short_hostname_problems"]

MAX_HOSTNAME = 63
_DNS_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


def job_name_problems(manifest: Mapping[str, object]) -> list[Problem]:
    """``metadata.name`` is given and a DNS label starting with a letter."""
    name = obj(manifest.get("metadata")).get("name")
    if not isinstance(name, str) or not name:
        return [Problem("metadata.name", "is required")]
    if not _DNS_LABEL.match(name):
        return [
            Problem(
                "metadata.name",
                f"{name!r} is not a DNS label starting with a letter (it names pods, a Service and a Workflow)",
            )
        ]
    return []


def cel_hostname_length(job: Defaulted) -> list[Problem]:
    """A replica's hostname ``<job>-<task>-<index>``, up to the highest index the task may reach
    (maxReplicas), must be a DNS label."""
    name, hi = job.name, job.spec.get("maxReplicas")
    if not name:
        return []
    problems = []
    for i, t in enumerate(job.tasks):
        replicas = t.get("replicas", 1)
        if not isinstance(replicas, int) or not isinstance(t.get("name"), str):
            continue
        top = max(replicas, hi if isinstance(hi, int) else 0) - 1
        host = f"{name}-{t['name']}-{top}"
        if len(host) > MAX_HOSTNAME:
            problems.append(
                Problem(
                    f"spec.tasks[{i}].name",
                    f"pod hostname {host!r} would be {len(host)} characters long; "
                    f"at most {MAX_HOSTNAME} are allowed (shorten the job or task name)",
                )
            )
    return problems


def short_hostname_problems(job: Defaulted) -> list[Problem]:
    """No task may be named ``<job>-<another task>``: its replicas' short hostnames ``<task>-<index>``
    would be the other task's long hostnames ``<job>-<task>-<index>``; nor ``<another task>-short``,
    the name of that task's short-hostname template (docs/rendering.md)."""
    name, tasks = job.name, job.tasks
    problems: list[Problem] = []
    if not name:
        return problems
    task_names = {t["name"] for t in tasks if isinstance(t.get("name"), str)}
    for i, t in enumerate(tasks):
        other = n.removeprefix(f"{name}-") if isinstance(n := t.get("name"), str) else None
        if other is not None and other != t["name"] and other in task_names:
            problems.append(
                Problem(
                    f"spec.tasks[{i}].name",
                    f"{t['name']!r} is the job's name {name!r}, a dash and the name of task {other!r}: its "
                    f"replicas' short hostnames <task>-<index> would be the long hostnames of {other!r}'s replicas "
                    '(docs/rendering.md, "Names in the node lists"); choose another name',
                )
            )
        base = n.removesuffix(SHORT_TEMPLATE_SUFFIX) if isinstance(n := t.get("name"), str) else None
        if base is not None and base != t["name"] and base in task_names:
            problems.append(
                Problem(
                    f"spec.tasks[{i}].name",
                    f"{t['name']!r} is the name of the Workflow template of task {base!r}'s replicas with short "
                    'hostnames (docs/rendering.md, "Names in the node lists"); choose another name',
                )
            )
    return problems
