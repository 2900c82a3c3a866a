"""Will Linux exec a job's pods? The longest environment string its membership can render (pure).

Linux refuses to exec a process one of whose environment strings (``NAME=value`` and its NUL) is
longer than :data:`~dihera.constants.MAX_ENV_STRING` bytes. DI-engine reads ``DI_NODES`` from the
environment only (``ding/entry/cli_parsers/k8s_parser.py``: ``os.environ["DI_NODES"].split(",")``),
so the whole list must fit in one string. The membership ConfigMap writes each replica in the
longest :class:`~dihera.naming.Addressing` form that fits (``dihera.render.objects``); the
shortest form, bare hostnames, with every replica but index 0 of each task given a short hostname
``<task>-<index>`` (:func:`~dihera.membership.assign_hostnames`), bounds what a job may hold.
:func:`membership_env_bound` is that bound for any membership of up to ``total`` replicas, whatever
their split among the tasks and whatever ranks a scale-down left vacant; validation refuses a job
whose bound does not fit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeGuard

from dihera.constants import ENV_STRING_MARGIN, MAX_ENV_STRING, TF_ENTRY_EXTRA, TF_ROLE_EXTRA, VACANT_RANK_ADDRESS
from dihera.errors import Problem
from dihera.membership import Membership

__all__ = [
    "MAX_VALUE_BYTES",
    "env_size_problems",
    "env_string_bytes",
    "max_replicas",
    "membership_env_bound",
    "nodes_bytes",
    "value_fits",
]

#: The longest membership ConfigMap value that still becomes an environment string Linux execs.
MAX_VALUE_BYTES = MAX_ENV_STRING - ENV_STRING_MARGIN


def env_string_bytes(name: str, value: str) -> int:
    """Bytes Linux counts for one environment variable: ``NAME=value`` and the NUL."""
    return len(name.encode()) + 1 + len(value.encode()) + 1


def value_fits(value: str) -> bool:
    """Whether a membership ConfigMap value, read into a variable, leaves an exec-able environment string."""
    return len(value.encode()) <= MAX_VALUE_BYTES


def nodes_bytes(job: str, membership: Membership) -> int:
    """Bytes of ``DI_NODES`` of ``membership`` in its shortest form (bare hostnames, each replica's
    own: long or short; vacant ranks included)."""
    top = max((r.rank for r in membership.replicas), default=-1)
    entries = [VACANT_RANK_ADDRESS] * (top + 1)
    for r in membership.replicas:
        entries[r.rank] = r.hostname(job)
    return len(",".join(entries).encode())


def _entries_bytes(job: str, task: str, start: int, stop: int, extra: int, floor: int) -> int:
    """Bytes of the entries for indices start..stop-1 of ``task``, each at least ``floor`` bytes, plus
    ``extra`` and a comma each: index 0 as its long hostname ``<job>-<task>-0`` (never short), the
    others as short hostnames ``<task>-<index>``; summed per range of equally long indices, not per entry."""
    size = 0
    if start == 0 and stop > 0:
        size += max(len(job.encode()) + len(task.encode()) + 3, floor) + extra + 1
        start = 1
    base = len(task.encode()) + 1
    digits = len(str(start))
    while start < stop:
        end = min(stop, 10**digits)
        size += (end - start) * (max(base + digits, floor) + extra + 1)
        start, digits = end, digits + 1
    return size


def _list_bound(job: str, counts: Mapping[str, int], total: int, extra: int, floor: int) -> int:
    """Bytes of a comma-joined list of every task's replicas at indices 0..count-1, and of the
    ``total - sum(counts)`` more replicas (maxReplicas) counted in the task with the longest name
    (whose short hostnames are the longest)."""
    if not counts:
        return 0
    longest = max(counts, key=lambda t: len(t.encode()))
    size = sum(_entries_bytes(job, t, 0, n, extra, floor) for t, n in counts.items())
    more = max(total - sum(counts.values()), 0)
    size += _entries_bytes(job, longest, counts[longest], counts[longest] + more, extra, floor)
    return max(size - 1, 0)


def membership_env_bound(
    job: str, counts: Mapping[str, int], total: int = 0, tensorflow_tasks: Sequence[str] = ()
) -> int:
    """The longest environment string (bytes, NUL included) of any membership of the tasks ``counts``
    (task -> replicas), grown to ``total`` replicas (maxReplicas) if larger, in its shortest form:
    bare hostnames, short ones for every replica but index 0 of each task.

    Each task's replicas are counted at indices 0..count-1 and any growth in the task whose hostname
    is longest; an entry is at least a vacant rank's address: no vacancy left by a scale-down and no
    split of the growth makes ``DI_NODES``, a ``DI_<TASK>_NODES`` or ``TF_CONFIG`` longer.
    ``ENV_STRING_MARGIN`` covers the variable's name and TF_CONFIG's text around the cluster. (A
    scale-up that reuses no retired index can go past index ``total``, and a membership holds the long
    hostnames of the replicas that joined while they fit: the scaling plan checks the exact membership
    with :func:`nodes_bytes`.)
    """
    if not counts:
        return 0
    total = max(total, sum(counts.values()))
    nodes = _list_bound(job, counts, total, 0, len(VACANT_RANK_ADDRESS))
    tf = 0
    if tensorflow_tasks:
        tf_counts = {t: counts[t] for t in tensorflow_tasks}
        tf_total = total - sum(n for t, n in counts.items() if t not in tf_counts)
        tf = _list_bound(job, tf_counts, tf_total, TF_ENTRY_EXTRA, 0) + TF_ROLE_EXTRA * len(tf_counts)
    return max(nodes, tf) + ENV_STRING_MARGIN


def max_replicas(job: str, counts: Mapping[str, int], tensorflow_tasks: Sequence[str] = ()) -> int:
    """The largest total (at least ``sum(counts)``) whose :func:`membership_env_bound` fits in
    :data:`MAX_ENV_STRING` bytes; ``sum(counts) - 1`` when the counts themselves do not fit."""
    lo, hi = sum(counts.values()) - 1, MAX_ENV_STRING  # every entry takes at least 2 bytes: hi never fits
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if membership_env_bound(job, counts, mid, tensorflow_tasks) <= MAX_ENV_STRING:
            lo = mid
        else:
            hi = mid
    return lo


def _provider(task: Mapping[str, object]) -> object:
    provider = task.get("envProvider")
    return provider.get("name") if isinstance(provider, Mapping) else None


def _is_count(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _named_tasks(spec: Mapping[str, object]) -> list[Mapping[str, object]]:
    tasks = spec.get("tasks")
    if not isinstance(tasks, list):
        return []
    return [t for t in tasks if isinstance(t, Mapping) and isinstance(t.get("name"), str)]


def env_size_problems(job: str, spec: Mapping[str, object]) -> list[Problem]:
    """A (defaulted) spec whose largest membership (its replicas, or maxReplicas when larger) would
    render an environment string Linux refuses to exec: one problem naming the field and what fits."""
    tasks = _named_tasks(spec)
    given = [t.get("replicas", 1) for t in tasks]
    counts = [c for c in given if _is_count(c)]
    if not job or not tasks or len(counts) != len(given):
        return []
    hi = spec.get("maxReplicas")
    total = max(sum(counts), hi if _is_count(hi) else 0)
    counts_by_task = {str(t["name"]): c for t, c in zip(tasks, counts, strict=True)}  # names: str (_named_tasks)
    tf = [str(t["name"]) for t in tasks if _provider(t) == "tensorflow"]
    bound = membership_env_bound(job, counts_by_task, total, tf)
    if bound <= MAX_ENV_STRING:
        return []
    grows = isinstance(hi, int) and hi > sum(counts)
    return [_too_long(job, counts_by_task, tf, total, bound, "spec.maxReplicas" if grows else "spec.tasks")]


def _too_long(job: str, counts: Mapping[str, int], tf: Sequence[str], total: int, bound: int, path: str) -> Problem:
    """The problem of a job whose ``total`` replicas make an environment string of ``bound`` bytes, saying
    how many replicas fit (the largest task cut to 1, the others kept)."""
    largest = max(counts, key=lambda t: counts[t])
    fit = max_replicas(job, {**counts, largest: 1}, tf)
    which = "DI_NODES and TF_CONFIG" if tf else "DI_NODES"
    return Problem(
        path,
        f"{total} replicas would make {which} up to {bound} bytes long (job {job!r}, even with short "
        f"hostnames <task>-<index>); Linux execs no process with an environment string over {MAX_ENV_STRING} "
        f"bytes: at most {fit} replicas fit with these names (use fewer replicas, or shorten the job or task "
        "names)",
    )
