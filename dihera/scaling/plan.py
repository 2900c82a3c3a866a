"""Plan a change of a running job's replicas (pure): the new counts and the membership to commit.

Scale-down removes the named replicas, else the task's highest-ranked; scale-up takes, per new
replica, the lowest index whose DAG task name the Workflow never used and the lowest free rank; a
new replica gets a short hostname when the long ones would not fit (``assign_hostnames``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from dihera.env_limits import MAX_VALUE_BYTES, nodes_bytes
from dihera.errors import InvalidScale, OutOfBounds, ScaleNotFound
from dihera.membership import Membership, Replica, assign_hostnames, ranks_after
from dihera.model import DIJob
from dihera.naming import dag_task_name
from dihera.render.providers import scaling_refusal
from dihera.scaling.dag import DagSlots, read_dag
from dihera.scaling.request import Action, ScaleRequest

__all__ = ["ScalePlan", "plan_scale", "target_counts"]


@dataclass(frozen=True)
class ScalePlan:
    """The outcome of a request: the job with its new counts and the membership to commit."""

    job: DIJob
    previous: Membership
    membership: Membership
    added: tuple[Replica, ...] = field(default=())
    removed: tuple[Replica, ...] = field(default=())

    @property
    def changed(self) -> bool:
        return self.membership != self.previous

    @property
    def replicas(self) -> dict[str, int]:
        return {t.name: t.replicas for t in self.job.tasks}


def _task_of(job: DIJob, name: str | None) -> str:
    names = [t.name for t in job.tasks]
    if name not in names:
        raise ScaleNotFound(f"job {job.id} has no task {name!r} (tasks: {', '.join(names)})")
    return name


def _named(membership: Membership, names: Sequence[str]) -> list[Replica]:
    by_name = {dag_task_name(r.task, r.index): r for r in membership.replicas}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise ScaleNotFound(
            f"no live replica named {', '.join(repr(n) for n in unknown)} (replicas: {', '.join(by_name)})"
        )
    return [by_name[n] for n in names]


def target_counts(job: DIJob, membership: Membership, request: ScaleRequest) -> dict[str, int]:
    """Each task's replica count after ``request``, relative to the live membership."""
    counts = membership.task_counts(t.name for t in job.tasks)
    if request.action is Action.SYNC:
        return {t.name: t.replicas for t in job.tasks}
    if request.action is Action.REMOVE_NAMED:
        if not request.names:
            raise InvalidScale("replicas: name at least one replica to remove (got [])")
        for r in _named(membership, request.names):
            counts[r.task] -= 1
        return counts
    task = _task_of(job, request.task)
    minimum = 1 if request.action is not Action.SET else 0
    if request.count < minimum or isinstance(request.count, bool):
        raise InvalidScale(f"replicas: must be an integer of at least {max(minimum, 1)} (got {request.count!r})")
    if request.action is Action.SET:
        counts[task] = request.count
    elif request.action is Action.ADD:
        counts[task] += request.count
    else:
        counts[task] -= request.count
    return counts


def _check_bounds(job: DIJob, current: Mapping[str, int], counts: Mapping[str, int]) -> None:
    for i, t in enumerate(job.tasks):
        if counts[t.name] < 1:
            raise OutOfBounds(
                f"spec.tasks[{i}].replicas: task {t.name!r} has {current[t.name]} replica(s) and must keep at "
                f"least 1 (asked for {counts[t.name]}); nothing changed"
            )
    total = sum(counts.values())
    low = job.min_replicas if job.min_replicas is not None else len(job.tasks)
    high = job.max_replicas
    if total < low or (high is not None and total > high):
        bounds = f"minReplicas={low}, maxReplicas={high if high is not None else 'unbounded'}"
        raise OutOfBounds(
            f"spec.tasks: the job would have {total} replicas in all (now {sum(current.values())}), "
            f"outside its bounds ({bounds}); nothing changed"
        )


def plan_scale(job: DIJob, membership: Membership, workflow: Mapping[str, object], request: ScaleRequest) -> ScalePlan:
    """What ``request`` does to a running job. Raises ScaleError (nothing to change) when refused.

    Scale-down removes the named replicas, else the task's highest-ranked; scale-up takes, per new
    replica, the lowest index whose DAG task name the Workflow never used and the next rank above every
    live replica (docs/rendering.md, "Membership: ranks that never move").
    """
    slots = read_dag(workflow)
    # A replica whose DAG task is already a tombstone is gone, whatever the ConfigMap says.
    live = tuple(r for r in membership.replicas if dag_task_name(r.task, r.index) not in slots.retired)
    current = Membership(membership.generation, live)
    counts = _allowed_counts(job, current, request)
    kept = _kept(job, current, counts, request.names)
    added = assign_hostnames(job, kept, _added(job, kept, counts, slots))
    replicas = tuple(sorted(kept + added))
    staying = frozenset(replicas)
    removed = tuple(r for r in membership.replicas if r not in staying)
    generation = membership.generation + (1 if replicas != membership.replicas else 0)
    if added:
        _check_nodes_size(job, Membership(generation, replicas), len(live))
    return ScalePlan(_with_counts(job, counts), membership, Membership(generation, replicas), tuple(added), removed)


def _allowed_counts(job: DIJob, current: Membership, request: ScaleRequest) -> dict[str, int]:
    """The counts ``request`` asks for, once within the job's bounds and allowed by its env providers."""
    counts = target_counts(job, current, request)
    _check_bounds(job, current.task_counts(t.name for t in job.tasks), counts)
    if refusal := scaling_refusal(job, current.task_counts(t.name for t in job.tasks), counts):
        raise InvalidScale(refusal)  # permanent: the same request is refused every time
    return counts


def _kept(job: DIJob, current: Membership, counts: Mapping[str, int], names: Sequence[str]) -> list[Replica]:
    """The replicas that stay: a task's replicas past its count go, the named ones first, then the highest-ranked."""
    named = {(r.task, r.index) for r in _named(current, names)} if names else set()
    kept: list[Replica] = []
    for t in job.tasks:
        mine = sorted(current.of_task(t.name), key=lambda r: ((r.task, r.index) not in named, -r.rank))
        drop = max(len(mine) - counts[t.name], 0)
        kept.extend(mine[drop:])
    return kept


def _added(job: DIJob, kept: Sequence[Replica], counts: Mapping[str, int], slots: DagSlots) -> list[Replica]:
    """The new replicas: per task, the lowest indices whose DAG task names the Workflow never used, and the
    ranks above every kept replica's (:func:`~dihera.membership.ranks_after`: a vacancy in the middle is
    never refilled, since the replicas above it would never dial the newcomer)."""
    ranks = ranks_after(kept)
    added: list[Replica] = []
    for t in job.tasks:
        have = {r.index for r in kept if r.task == t.name}
        index = 0
        for _ in range(counts[t.name] - len(have)):
            while index in have or slots.used(dag_task_name(t.name, index)):
                index += 1
            added.append(Replica(next(ranks), t.name, index))
            index += 1
    return added


def _check_nodes_size(job: DIJob, membership: Membership, live: int) -> None:
    """OutOfBounds when ``membership``'s DI_NODES, even in its shortest form, is longer than Linux execs."""
    if (size := nodes_bytes(job.name, membership)) > MAX_VALUE_BYTES:
        raise OutOfBounds(
            f"spec.tasks: the job would have {len(membership.replicas)} replicas in all (now {live}), whose DI_NODES "
            f"would be {size} bytes even as bare hostnames, short ones (<task>-<index>) for the new replicas; "
            f"Linux execs no process with an environment string over {MAX_VALUE_BYTES} bytes of value "
            "(docs/rendering.md); nothing changed"
        )


def _with_counts(job: DIJob, counts: Mapping[str, int]) -> DIJob:
    """``job`` with each task's replicas set to its count."""
    new_job = job
    for t in job.tasks:
        if t.replicas != counts[t.name]:
            new_job = new_job.with_replicas(t.name, counts[t.name])
    return new_job
