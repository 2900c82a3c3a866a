"""Plan a change of a running job's replicas (pure): new membership, Workflow patch, pods to delete.

The job's membership ConfigMap is the commitment; the Workflow is converged to it. How a running
Argo Workflow is changed (measured on Argo v3.7.18 and v4.1.4, see docs/scaling.md):

- a new replica is a new DAG task appended to the entry DAG: Argo schedules it on its next pass;
- a removed replica's DAG task stays in the DAG as a tombstone whose template is swapped for
  ``dihera-retired`` (``suspend: {duration: "0"}``): Argo marks the node Succeeded at once, so no
  retry starts when its pod is deleted, and the Workflow still ends Succeeded;
- a DAG task name is never used twice in one Workflow (Argo keys nodes by name), so new replicas
  take an index no DAG task of their task ever had, and the lowest rank no live replica holds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from dihera.membership import Membership, Replica
from dihera.model import DIJob
from dihera.naming import ANNOTATION_REPLICAS, LABEL_POD, LABEL_TASK_TYPE, dag_task_name
from dihera.render.workflow import DESCRIPTION_ANNOTATION, ENTRYPOINT, dag_task, describe

__all__ = [
    "GENERATION_ANNOTATION",
    "RETIRED_TEMPLATE",
    "Action",
    "DagSlots",
    "ScaleError",
    "ScalePlan",
    "ScaleRequest",
    "job_spec_patch",
    "plan_scale",
    "pods_to_delete",
    "read_dag",
    "spec_generation",
    "spec_is_current",
    "stamp_patch",
    "target_counts",
    "workflow_patch",
]

RETIRED_TEMPLATE = "dihera-retired"
#: On the Workflow: the membership generation its DAG was last converged to. On the DIJob: the
#: membership generation its ``spec.tasks[].replicas`` were last written or synced at (its stamp).
GENERATION_ANNOTATION = "diengine/membership-generation"
_TERMINAL_POD_PHASES = frozenset({"Succeeded", "Failed"})


class ScaleError(ValueError):
    """A scale request that cannot be applied; nothing was changed.

    ``reason``: ``invalid`` (bad request), ``not-found`` (no such job, task or replica),
    ``out-of-bounds`` (min/max replicas), ``conflict`` (the job is not in a state to scale).
    """

    def __init__(self, message: str, reason: str = "invalid") -> None:
        super().__init__(message)
        self.reason = reason


class Action(StrEnum):
    """What a scale request asks."""

    SET = "set"  # set the task's replicas to ``count``
    ADD = "add"  # add ``count`` replicas to the task
    REMOVE = "remove"  # remove ``count`` replicas of the task, the highest-ranked
    REMOVE_NAMED = "remove-named"  # remove the replicas ``names`` (DAG task names, ``collector-3``)
    SYNC = "sync"  # make membership and spec agree: whichever is newer wins (see spec_is_current)


@dataclass(frozen=True)
class ScaleRequest:
    """One scale request. Build with the class methods."""

    action: Action
    task: str | None = None
    count: int = 0
    names: tuple[str, ...] = ()

    @classmethod
    def set_replicas(cls, task: str, replicas: int) -> ScaleRequest:
        return cls(Action.SET, task, replicas)

    @classmethod
    def add(cls, task: str, replicas: int) -> ScaleRequest:
        return cls(Action.ADD, task, replicas)

    @classmethod
    def remove(cls, task: str, replicas: int) -> ScaleRequest:
        return cls(Action.REMOVE, task, replicas)

    @classmethod
    def remove_named(cls, names: Iterable[str]) -> ScaleRequest:
        return cls(Action.REMOVE_NAMED, names=tuple(dict.fromkeys(names)))

    @classmethod
    def sync(cls) -> ScaleRequest:
        return cls(Action.SYNC)


@dataclass(frozen=True)
class DagSlots:
    """The entry DAG of a job's Workflow: where it is and which replica slots it holds."""

    template_index: int
    live: Mapping[str, int]  # DAG task name -> position, for replicas still running
    retired: Mapping[str, int]  # DAG task name -> position, for tombstones
    templates: Mapping[str, int]  # template name -> position in spec.templates

    @property
    def tasks_path(self) -> str:
        return f"/spec/templates/{self.template_index}/dag/tasks"

    def used(self, name: str) -> bool:
        return name in self.live or name in self.retired


def read_dag(workflow: Mapping[str, Any]) -> DagSlots:
    """Find the entry DAG ``dijob`` of a rendered Workflow; ScaleError(conflict) if it has none."""
    templates = list((workflow.get("spec") or {}).get("templates") or [])
    positions = {t.get("name"): i for i, t in enumerate(templates)}
    index = positions.get(ENTRYPOINT)
    if index is None or "dag" not in templates[index]:
        name = (workflow.get("metadata") or {}).get("name")
        raise ScaleError(f"Workflow {name}: no DAG template {ENTRYPOINT!r}; not a dihera Workflow", "conflict")
    live: dict[str, int] = {}
    retired: dict[str, int] = {}
    for pos, task in enumerate(templates[index]["dag"].get("tasks") or []):
        (retired if task.get("template") == RETIRED_TEMPLATE else live)[task["name"]] = pos
    return DagSlots(index, live, retired, {str(k): v for k, v in positions.items()})


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


def _counts(job: DIJob, membership: Membership) -> dict[str, int]:
    return {t.name: len(membership.of_task(t.name)) for t in job.tasks}


def _task_of(job: DIJob, name: str | None) -> str:
    names = [t.name for t in job.tasks]
    if name not in names:
        raise ScaleError(f"job {job.id} has no task {name!r} (tasks: {', '.join(names)})", "not-found")
    return name


def _named(membership: Membership, names: Sequence[str]) -> list[Replica]:
    by_name = {dag_task_name(r.task, r.index): r for r in membership.replicas}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise ScaleError(
            f"no live replica named {', '.join(repr(n) for n in unknown)} (replicas: {', '.join(by_name)})",
            "not-found",
        )
    return [by_name[n] for n in names]


def target_counts(job: DIJob, membership: Membership, request: ScaleRequest) -> dict[str, int]:
    """Each task's replica count after ``request``, relative to the live membership."""
    counts = _counts(job, membership)
    if request.action is Action.SYNC:
        return {t.name: t.replicas for t in job.tasks}
    if request.action is Action.REMOVE_NAMED:
        if not request.names:
            raise ScaleError("replicas: name at least one replica to remove (got [])")
        for r in _named(membership, request.names):
            counts[r.task] -= 1
        return counts
    task = _task_of(job, request.task)
    minimum = 1 if request.action is not Action.SET else 0
    if request.count < minimum or isinstance(request.count, bool):
        raise ScaleError(f"replicas: must be an integer of at least {max(minimum, 1)} (got {request.count!r})")
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
            raise ScaleError(
                f"spec.tasks[{i}].replicas: task {t.name!r} has {current[t.name]} replica(s) and must keep at "
                f"least 1 (asked for {counts[t.name]}); nothing changed",
                "out-of-bounds",
            )
    total = sum(counts.values())
    low = job.min_replicas if job.min_replicas is not None else len(job.tasks)
    high = job.max_replicas
    if total < low or (high is not None and total > high):
        bounds = f"minReplicas={low}, maxReplicas={high if high is not None else 'unbounded'}"
        raise ScaleError(
            f"spec.tasks: the job would have {total} replicas in all (now {sum(current.values())}), "
            f"outside its bounds ({bounds}); nothing changed",
            "out-of-bounds",
        )


def plan_scale(job: DIJob, membership: Membership, workflow: Mapping[str, Any], request: ScaleRequest) -> ScalePlan:
    """What ``request`` does to a running job. Raises ScaleError (nothing to change) when refused.

    Scale-down removes the named replicas, else the task's highest-ranked; scale-up takes, per new
    replica, the lowest index whose DAG task name the Workflow never used and the lowest free rank.
    """
    slots = read_dag(workflow)
    # A replica whose DAG task is already a tombstone is gone, whatever the ConfigMap says.
    live = tuple(r for r in membership.replicas if dag_task_name(r.task, r.index) not in slots.retired)
    current = Membership(membership.generation, live)
    counts = target_counts(job, current, request)
    _check_bounds(job, _counts(job, current), counts)
    named = {(r.task, r.index) for r in _named(current, request.names)} if request.names else set()
    kept: list[Replica] = []
    for t in job.tasks:
        mine = sorted(current.of_task(t.name), key=lambda r: ((r.task, r.index) not in named, -r.rank))
        drop = max(len(mine) - counts[t.name], 0)
        kept.extend(mine[drop:])
    ranks = {r.rank for r in kept}
    added: list[Replica] = []
    for t in job.tasks:
        have = {r.index for r in kept if r.task == t.name}
        index = 0
        for _ in range(counts[t.name] - len(have)):
            while index in have or slots.used(dag_task_name(t.name, index)):
                index += 1
            rank = min(set(range(len(ranks) + 1)) - ranks)
            ranks.add(rank)
            added.append(Replica(rank, t.name, index))
            index += 1
    replicas = tuple(sorted(kept + added))
    removed = tuple(r for r in membership.replicas if r not in replicas)
    generation = membership.generation + (1 if replicas != membership.replicas else 0)
    new_job = job
    for t in job.tasks:
        if t.replicas != counts[t.name]:
            new_job = new_job.with_replicas(t.name, counts[t.name])
    return ScalePlan(new_job, membership, Membership(generation, replicas), tuple(added), removed)


def _pointer(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def workflow_patch(membership: Membership, workflow: Mapping[str, Any]) -> list[dict[str, Any]]:
    """JSON patch converging the Workflow's DAG to ``membership`` ([] when it already matches).

    Retires live DAG tasks that left the membership, appends DAG tasks for new replicas, keeps
    every other DAG task untouched. Each positional operation is guarded by a ``test`` of the name.
    """
    slots = read_dag(workflow)
    spec = workflow["spec"]
    wanted = {dag_task_name(r.task, r.index): r for r in membership.replicas}
    back = [n for n in wanted if n in slots.retired]
    if back:
        raise ScaleError(f"replica(s) {', '.join(back)} were retired from the Workflow and cannot return", "conflict")
    ops: list[dict[str, Any]] = []
    retire = [n for n in slots.live if n not in wanted]
    if retire and RETIRED_TEMPLATE not in slots.templates:
        ops.append(
            {
                "op": "add",
                "path": "/spec/templates/-",
                "value": {"name": RETIRED_TEMPLATE, "suspend": {"duration": "0"}},
            }
        )
    for name in retire:
        path = f"{slots.tasks_path}/{slots.live[name]}"
        ops += [
            {"op": "test", "path": f"{path}/name", "value": name},
            {"op": "replace", "path": f"{path}/template", "value": RETIRED_TEMPLATE},
        ]
    for name, r in wanted.items():
        if not slots.used(name):
            entry = dag_task(r.task, r.index, r.rank).model_dump(by_alias=True, exclude_none=True, mode="json")
            ops.append({"op": "add", "path": f"{slots.tasks_path}/-", "value": entry})
    total = str(len(membership.replicas))
    tasks = {r.task for r in membership.replicas}
    for name in sorted(tasks):
        pos = slots.templates.get(name)
        annotations = (
            ((spec["templates"][pos].get("metadata") or {}).get("annotations") or {}) if pos is not None else {}
        )
        if ANNOTATION_REPLICAS in annotations and annotations[ANNOTATION_REPLICAS] != total:
            key = f"/spec/templates/{pos}/metadata/annotations/{_pointer(ANNOTATION_REPLICAS)}"
            ops.append({"op": "replace", "path": key, "value": total})
    meta_annotations = (workflow.get("metadata") or {}).get("annotations")
    generation = str(membership.generation)
    if ops or (meta_annotations or {}).get(GENERATION_ANNOTATION) != generation:
        if meta_annotations is None:
            ops.append({"op": "add", "path": "/metadata/annotations", "value": {}})
        ops.append(
            {"op": "add", "path": f"/metadata/annotations/{_pointer(GENERATION_ANNOTATION)}", "value": generation}
        )
        ops.append(
            {
                "op": "add",
                "path": f"/metadata/annotations/{_pointer(DESCRIPTION_ANNOTATION)}",
                "value": _description(membership, workflow),
            }
        )
    return ops


def _description(membership: Membership, workflow: Mapping[str, Any]) -> str:
    """The Argo UI description for ``membership``: task types read from the task templates' labels."""
    meta = workflow.get("metadata") or {}
    tasks = [
        (str(t["name"]), str(labels[LABEL_TASK_TYPE]), len(membership.of_task(str(t["name"]))))
        for t in workflow["spec"]["templates"]
        if LABEL_TASK_TYPE in (labels := (t.get("metadata") or {}).get("labels") or {})
    ]
    return describe(f"{meta.get('namespace')}/{meta.get('name')}", tasks, membership.generation)


def pods_to_delete(job_name: str, workflow: Mapping[str, Any], pods: Iterable[Mapping[str, Any]]) -> list[str]:
    """Names of the job's pods still alive on a retired DAG task (safe: a retired slot never returns)."""
    # a replica's hostname is ``<job>-<task>-<index>``, its DAG task name ``<task>-<index>``
    retired = {f"{job_name}-{n}" for n in read_dag(workflow).retired}
    out = []
    for pod in pods:
        meta = pod.get("metadata") or {}
        phase = (pod.get("status") or {}).get("phase")
        alive = phase not in _TERMINAL_POD_PHASES and not meta.get("deletionTimestamp")
        if alive and (meta.get("labels") or {}).get(LABEL_POD) in retired:
            out.append(str(meta["name"]))
    return sorted(out)


def spec_generation(manifest: Mapping[str, Any]) -> int:
    """The DIJob's stamp: the membership generation its spec's replicas were written or synced at.

    No stamp: 1 (a job's first membership is rendered from its spec); an unreadable one: 0 (older
    than any membership, so the spec follows the membership).
    """
    text = ((manifest.get("metadata") or {}).get("annotations") or {}).get(GENERATION_ANNOTATION)
    try:
        return int(text) if text is not None else 1
    except ValueError:
        return 0


def spec_is_current(manifest: Mapping[str, Any], membership: Membership) -> bool:
    """Whether the DIJob's spec is at least as new as ``membership`` (its stamp ≥ the generation).

    A current spec whose counts differ from the membership is a hand edit: the membership follows it.
    An older one was written before ``membership`` was committed (by a scaler since overtaken, or by
    hand while a request was in flight): it is never applied; the spec follows the membership.
    """
    return spec_generation(manifest) >= membership.generation


def _stamp_ops(manifest: Mapping[str, Any], generation: int) -> list[dict[str, Any]]:
    if spec_generation(manifest) >= generation:
        return []  # the stamp never goes back
    ops: list[dict[str, Any]] = []
    if (manifest.get("metadata") or {}).get("annotations") is None:
        ops.append({"op": "add", "path": "/metadata/annotations", "value": {}})
    key = f"/metadata/annotations/{_pointer(GENERATION_ANNOTATION)}"
    ops.append({"op": "add", "path": key, "value": str(generation)})
    return ops


def job_spec_patch(
    manifest: Mapping[str, Any], counts: Mapping[str, int], generation: int | None = None
) -> list[dict[str, Any]]:
    """JSON patch setting ``spec.tasks[i].replicas`` of a DIJob manifest to ``counts`` ([] if equal).

    With ``generation`` (the membership ``counts`` were read from) it also stamps the DIJob with it,
    in the same patch; a stamp is never lowered, and a stale ``generation`` writes nothing at all.
    """
    if generation is not None and spec_generation(manifest) > generation:
        return []  # a newer writer already put a newer membership in the spec
    ops: list[dict[str, Any]] = []
    for i, t in enumerate(manifest["spec"]["tasks"]):
        name = t.get("name") or t.get("type")
        if name in counts and t.get("replicas", 1) != counts[name]:
            if "name" in t:
                ops.append({"op": "test", "path": f"/spec/tasks/{i}/name", "value": t["name"]})
            ops.append({"op": "replace", "path": f"/spec/tasks/{i}/replicas", "value": counts[name]})
    if generation is not None:
        ops += _stamp_ops(manifest, generation)
    return ops


def stamp_patch(manifest: Mapping[str, Any], generation: int) -> list[dict[str, Any]]:
    """JSON patch stamping a DIJob (metadata only) with ``generation`` ([] if its stamp is as new)."""
    return _stamp_ops(manifest, generation)
