"""Shrink before eviction (pure): how many collectors running jobs give back so a waiting Workload fits,
and how many a shrunk job takes back once the quota is free again (docs/queueing.md, "Shrink before
eviction").

Kueue's preemption evicts a whole Workload: for a DIJob that is the learner with its replay buffer and
optimiser state, stopped and resumed from its last checkpoint, even when a few of its collectors would
have freed enough quota. Collectors are the one elastic part of a DI-engine job (the learner trains on
whatever arrives; fewer collectors mean fewer samples per second, not a broken job), so before a
higher-priority Workload of the same ClusterQueue makes Kueue preempt, the controller gives back
collectors of lower-priority, preemptible jobs: never a learner or an evaluator, never below a collector
task's minimum, and only as many as the waiting Workload lacks. When collectors cannot free enough, nothing
is shrunk (a shrink that does not avoid the eviction only loses samples) and Kueue preempts as before.

Quantities are compared per resource name, summed over the ClusterQueue's flavors: exact for a
ClusterQueue with one flavor per resource (the common case and the project's), an estimate otherwise
(Kueue may still preempt when the freed quota is in another flavor than the one it assigns).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from dihera.constants import ANNOTATION_SHRUNK_FROM
from dihera.model import DIJob, TaskType

__all__ = [
    "Grow",
    "Shrink",
    "Spare",
    "Victim",
    "cluster_queue_free",
    "collector_minimum",
    "describe_amounts",
    "grown_annotation",
    "parse_quantity",
    "plan_grow",
    "plan_shrink",
    "pod_requests",
    "shortfall",
    "shrunk_annotation",
    "shrunk_from",
    "shrunk_note",
    "total_shrunk",
    "victim_of",
    "workload_requests",
]

_SUFFIXES = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal(10**3),
    "M": Decimal(10**6),
    "G": Decimal(10**9),
    "T": Decimal(10**12),
    "P": Decimal(10**15),
    "E": Decimal(10**18),
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$")

Amounts = Mapping[str, Decimal]


def parse_quantity(value: object) -> Decimal:
    """A Kubernetes quantity (``500m``, ``1Gi``, ``2``, ``1e3``) as a number; ValueError names the value."""
    text = str(value).strip()
    match = _QUANTITY.match(text)
    if match is None or match.group(2) not in _SUFFIXES:
        raise ValueError(f"not a Kubernetes quantity: {value!r} (e.g. 500m, 2, 1Gi)")
    try:
        return Decimal(match.group(1)) * _SUFFIXES[match.group(2)]
    except InvalidOperation as err:
        raise ValueError(f"not a Kubernetes quantity: {value!r} (e.g. 500m, 2, 1Gi)") from err


def _add(into: dict[str, Decimal], amounts: Amounts, times: int = 1) -> None:
    for name, amount in amounts.items():
        into[name] = into.get(name, Decimal(0)) + amount * times


def _container_requests(container: Mapping[str, Any]) -> dict[str, Decimal]:
    requests = (container.get("resources") or {}).get("requests") or {}
    return {str(k): parse_quantity(v) for k, v in requests.items()}


def pod_requests(template: Mapping[str, Any]) -> dict[str, Decimal]:
    """What one pod of ``template`` (a pod template, or its spec) requests, as Kueue counts it: the sum of
    its containers' requests, at least the largest init container's, plus the pod's ``overhead``."""
    spec = template.get("spec", template) or {}
    total: dict[str, Decimal] = {}
    for container in spec.get("containers") or []:
        _add(total, _container_requests(container))
    for init in spec.get("initContainers") or []:
        for name, amount in _container_requests(init).items():
            total[name] = max(total.get(name, Decimal(0)), amount)
    _add(total, {str(k): parse_quantity(v) for k, v in (spec.get("overhead") or {}).items()})
    return total


def workload_requests(workload: Mapping[str, Any]) -> dict[str, Decimal]:
    """What a Workload asks of its ClusterQueue: every podSet's pod requests times its count, less the pods
    its status says are reclaimable."""
    reclaimable = {
        str(r.get("name")): int(r.get("count") or 0)
        for r in (workload.get("status") or {}).get("reclaimablePods") or []
    }
    total: dict[str, Decimal] = {}
    for pod_set in (workload.get("spec") or {}).get("podSets") or []:
        count = max(int(pod_set.get("count") or 0) - reclaimable.get(str(pod_set.get("name")), 0), 0)
        _add(total, pod_requests(pod_set.get("template") or {}), count)
    return total


def cluster_queue_free(cluster_queue: Mapping[str, Any]) -> dict[str, Decimal]:
    """Resource → nominal quota less what is reserved, summed over the ClusterQueue's flavors
    (``spec.resourceGroups``, ``status.flavorsReservation``). Borrowing from a cohort is not counted."""
    free: dict[str, Decimal] = {}
    for group in (cluster_queue.get("spec") or {}).get("resourceGroups") or []:
        for flavor in group.get("flavors") or []:
            for res in flavor.get("resources") or []:
                _add(free, {str(res["name"]): parse_quantity(res.get("nominalQuota", 0))})
    for flavor in (cluster_queue.get("status") or {}).get("flavorsReservation") or []:
        for res in flavor.get("resources") or []:
            _add(free, {str(res["name"]): parse_quantity(res.get("total", 0))}, -1)
    return free


def shortfall(needed: Amounts, free: Amounts) -> dict[str, Decimal]:
    """Resource → how much of ``needed`` ``free`` lacks (resources that fit are left out)."""
    return {r: n - free.get(r, Decimal(0)) for r, n in needed.items() if n > free.get(r, Decimal(0))}


@dataclass(frozen=True)
class Spare:
    """A collector task of a running job: its live replicas, the fewest it may run with, one replica's
    requests."""

    task: str
    replicas: int
    minimum: int
    per_replica: Amounts


@dataclass(frozen=True)
class Victim:
    """A running, preemptible job whose Workload holds quota in the ClusterQueue. ``priority``: its
    Workload's; ``floor``: the fewest replicas the whole job may run with (``spec.minReplicas``, 0: none);
    ``total``: its live replicas, every task."""

    namespace: str
    name: str
    priority: int
    spares: tuple[Spare, ...]
    total: int
    floor: int = 0


@dataclass(frozen=True)
class Shrink:
    """Give back ``before - after`` replicas of ``task`` of job ``namespace/name``."""

    namespace: str
    name: str
    task: str
    before: int
    after: int

    @property
    def given_back(self) -> int:
        return self.before - self.after


def _helps(per_replica: Amounts, missing: Amounts) -> bool:
    return any(per_replica.get(r, Decimal(0)) > 0 for r in missing)


def _take(victim: Victim, missing: dict[str, Decimal]) -> list[Shrink]:
    """The collectors ``victim`` gives back, one at a time, while ``missing`` lacks anything they free
    (``missing`` is decreased in place)."""
    budget = victim.total - victim.floor
    out: list[Shrink] = []
    for spare in victim.spares:
        after = spare.replicas
        while missing and budget > 0 and after > spare.minimum and _helps(spare.per_replica, missing):
            after -= 1
            budget -= 1
            for r, amount in spare.per_replica.items():
                if r in missing:
                    missing[r] -= amount
                    if missing[r] <= 0:
                        del missing[r]
        if after < spare.replicas:
            out.append(Shrink(victim.namespace, victim.name, spare.task, spare.replicas, after))
    return out


def plan_shrink(needed: Amounts, free: Amounts, priority: int, victims: Iterable[Victim]) -> tuple[Shrink, ...] | None:
    """The collectors to give back so a Workload asking ``needed`` at ``priority`` fits in ``free``.

    ``()``: it fits already; None: giving back every collector above its minimum of every job of lower
    priority would not free enough (then nothing is shrunk and Kueue's preemption applies). Jobs of the
    lowest priority give back first (then by namespace and name); each gives back one collector at a
    time, and only collectors whose requests include a missing resource, so no more than needed.
    """
    missing = shortfall(needed, free)
    if not missing:
        return ()
    plan: list[Shrink] = []
    for victim in sorted(victims, key=lambda v: (v.priority, v.namespace, v.name)):
        if victim.priority >= priority or not missing:
            continue
        plan.extend(_take(victim, missing))
    return tuple(plan) if not missing else None


@dataclass(frozen=True)
class Grow:
    """Take back ``after - before`` replicas of ``task`` (``after`` at most the count it was shrunk from)."""

    task: str
    before: int
    after: int


def plan_grow(
    wanted: Mapping[str, int],
    live: Mapping[str, int],
    per_replica: Mapping[str, Amounts],
    free: Amounts,
    higher_waiting: bool,
) -> tuple[Grow, ...]:
    """What a shrunk job takes back: each task of ``wanted`` (task → the count it was shrunk from) grows
    from its ``live`` count by as many replicas as ``free`` holds, tasks in ``wanted``'s order. Nothing
    while a Workload of higher priority waits in the ClusterQueue (the quota is its, not this job's)."""
    if higher_waiting:
        return ()
    left = dict(free)
    out: list[Grow] = []
    for task, want in wanted.items():
        now = live.get(task, 0)
        after = now
        need = per_replica.get(task, {})
        while after < want and not shortfall(need, left):
            _add(left, need, -1)
            after += 1
        if after > now:
            out.append(Grow(task, now, after))
    return tuple(out)


def total_shrunk(plan: Sequence[Shrink]) -> int:
    """Collectors a plan gives back, every job."""
    return sum(s.given_back for s in plan)


def describe_amounts(amounts: Amounts) -> str:
    """``cpu 3, memory 1.5Gi``-like text for Events (numbers as plain decimals, in the resource's base unit)."""
    return ", ".join(f"{r} {format(a.normalize(), 'f')}" for r, a in sorted(amounts.items())) or "nothing"


def collector_minimum(job: DIJob, task: str) -> int:
    """The fewest replicas a collector task keeps when it gives some back: 1 (a DI-engine learner with no
    collector waits for data for ever; a job that can do without one should say so with fewer replicas)."""
    job.task(task)
    return 1


def victim_of(job: DIJob, priority: int) -> Victim:
    """``job`` (running, its Workload of ``priority`` admitted) as a job that may give collectors back: its
    collector tasks (spec order) with their replicas, minimum and one replica's requests."""
    spares = tuple(
        Spare(t.name, t.replicas, collector_minimum(job, t.name), pod_requests(t.template))
        for t in job.tasks
        if t.type is TaskType.COLLECTOR
    )
    return Victim(job.namespace, job.name, priority, spares, job.total_replicas, job.min_replicas or 0)


def shrunk_from(annotations: Mapping[str, str] | None) -> dict[str, int]:
    """Task → the replicas a shrunk job grows back to (its ``diengine/shrunk-from``); {} when not shrunk or
    unreadable (a hand edit of the annotation: the job is then left at its size)."""
    raw = (annotations or {}).get(ANNOTATION_SHRUNK_FROM)
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return {}
    if not isinstance(value, dict):
        return {}
    return {str(k): v for k, v in value.items() if isinstance(v, int) and not isinstance(v, bool) and v > 0}


def shrunk_annotation(annotations: Mapping[str, str] | None, shrinks: Iterable[Shrink]) -> str:
    """The ``diengine/shrunk-from`` value after ``shrinks`` (of one job): a task shrunk again keeps the count
    it had before its first shrink."""
    wanted = shrunk_from(annotations)
    for s in shrinks:
        wanted.setdefault(s.task, s.before)
    return json.dumps(wanted, sort_keys=True, separators=(",", ":"))


def grown_annotation(annotations: Mapping[str, str] | None, live: Mapping[str, int]) -> str | None:
    """The ``diengine/shrunk-from`` value once the tasks have ``live`` replicas: tasks back at (or above) their
    count are left out; None when none is left (the annotation is removed)."""
    wanted = {t: n for t, n in shrunk_from(annotations).items() if live.get(t, 0) < n}
    return json.dumps(wanted, sort_keys=True, separators=(",", ":")) if wanted else None


def shrunk_note(annotations: Mapping[str, str] | None, live: Mapping[str, int]) -> str | None:
    """What the Running condition of a shrunk job adds to its message (None: not shrunk): ``collector 3 of
    7: 4 replica(s) given back to a higher-priority Workload of its ClusterQueue; they come back when the
    quota is free``."""
    short = {t: (live.get(t, 0), n) for t, n in shrunk_from(annotations).items() if live.get(t, 0) < n}
    if not short:
        return None
    counts = ", ".join(f"{t} {now} of {wanted}" for t, (now, wanted) in short.items())
    given = sum(wanted - now for now, wanted in short.values())
    return (
        f"{counts}: {given} replica(s) given back to a higher-priority Workload of its ClusterQueue; "
        "they come back when the quota is free"
    )
