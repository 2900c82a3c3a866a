"""The JSON patch converging a running Workflow to a membership (pure).

The pods it leaves to delete, and when: :mod:`dihera.scaling.retired_pods`.

New replicas are DAG tasks appended to the entry DAG (Argo schedules them on its next pass); removed
ones become tombstones (see :mod:`dihera.scaling.dag`); every positional operation is guarded by a
``test`` of the DAG task's name. A new replica with a short hostname runs its task's ``<task>-short``
template, added (derived from the task's template) when the Workflow does not have it yet.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dihera.argo_ui import ui_annotations
from dihera.constants import (
    ANNOTATION_GENERATION,
    ANNOTATION_REPLICAS,
    ANNOTATION_TRAINING_SUMMARY,
    LABEL_TASK_NAME,
    LABEL_TASK_TYPE,
)
from dihera.errors import RetiredReplica
from dihera.membership import Membership, Replica
from dihera.naming import dag_task_name, short_template_name
from dihera.patches import PatchOp, pointer
from dihera.scaling.dag import RETIRED_TEMPLATE, DagSlots, read_dag

__all__ = ["workflow_patch"]


def workflow_patch(membership: Membership, workflow: Mapping[str, Any]) -> list[PatchOp]:
    """JSON patch converging the Workflow's DAG to ``membership`` ([] when it already matches).

    Retires live DAG tasks that left the membership, appends DAG tasks for new replicas, keeps
    every other DAG task untouched. Each positional operation is guarded by a ``test`` of the name.
    """
    slots = read_dag(workflow)
    wanted = {dag_task_name(r.task, r.index): r for r in membership.replicas}
    _refuse_returning(wanted, slots)
    total = str(len(membership.replicas))
    ops = _retire_ops(wanted, slots)
    new = [r for name, r in wanted.items() if not slots.used(name)]
    ops += _short_template_ops(new, workflow, slots, total)
    ops += _new_task_ops(new, workflow, slots)
    ops += _replica_count_ops(membership, workflow, slots, total)
    ops += _generation_ops(membership, workflow, changed=bool(ops))
    return ops


def _refuse_returning(wanted: Mapping[str, Replica], slots: DagSlots) -> None:
    """A retired DAG task cannot run again: RetiredReplica when the membership names one."""
    back = [n for n in wanted if n in slots.retired]
    if back:
        raise RetiredReplica(f"replica(s) {', '.join(back)} were retired from the Workflow and cannot return")


def _retire_ops(wanted: Mapping[str, Replica], slots: DagSlots) -> list[PatchOp]:
    """Live DAG tasks that left the membership run the retired template (added when missing)."""
    ops: list[PatchOp] = []
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
    return ops


def _short_template_ops(
    new: Sequence[Replica], workflow: Mapping[str, Any], slots: DagSlots, total: str
) -> list[PatchOp]:
    """The ``<task>-short`` templates the new short-hostname replicas need and the Workflow lacks."""
    from dihera.render.workflow import short_variant  # Hera's models: loaded only when a scale needs them

    ops: list[PatchOp] = []
    for task in sorted({r.task for r in new if r.short}):
        if short_template_name(task) in slots.templates or task not in slots.templates:
            continue
        value = short_variant(workflow["spec"]["templates"][slots.templates[task]])
        annotations = (value.get("metadata") or {}).get("annotations") or {}
        if ANNOTATION_REPLICAS in annotations:
            annotations[ANNOTATION_REPLICAS] = total
        ops.append({"op": "add", "path": "/spec/templates/-", "value": value})
    return ops


def _new_task_ops(new: Sequence[Replica], workflow: Mapping[str, Any], slots: DagSlots) -> list[PatchOp]:
    """A DAG task appended for each new replica."""
    from dihera.render.workflow import dag_task  # Hera's models: loaded only when a scale needs them

    drops = _drop_tasks(workflow, slots)
    return [
        {
            "op": "add",
            "path": f"{slots.tasks_path}/-",
            "value": dag_task(r.task, r.index, r.rank, r.task in drops, r.short).model_dump(
                by_alias=True, exclude_none=True, mode="json"
            ),
        }
        for r in new
    ]


def _replica_count_ops(
    membership: Membership, workflow: Mapping[str, Any], slots: DagSlots, total: str
) -> list[PatchOp]:
    """The replica templates' (and their ``-short`` variants') replica-count annotation set to ``total``."""
    tasks = {r.task for r in membership.replicas}
    ops: list[PatchOp] = []
    for name in sorted([*tasks, *(short_template_name(t) for t in tasks)]):
        pos = slots.templates.get(name)
        if pos is None:
            continue
        annotations = (workflow["spec"]["templates"][pos].get("metadata") or {}).get("annotations") or {}
        if ANNOTATION_REPLICAS in annotations and annotations[ANNOTATION_REPLICAS] != total:
            key = f"/spec/templates/{pos}/metadata/annotations/{pointer(ANNOTATION_REPLICAS)}"
            ops.append({"op": "replace", "path": key, "value": total})
    return ops


def _generation_ops(membership: Membership, workflow: Mapping[str, Any], changed: bool) -> list[PatchOp]:
    """The Argo UI annotations (generation among them), when the patch changes anything or the
    Workflow's generation annotation is not the membership's."""
    meta_annotations = (workflow.get("metadata") or {}).get("annotations")
    if not changed and (meta_annotations or {}).get(ANNOTATION_GENERATION) == str(membership.generation):
        return []
    ops: list[PatchOp] = []
    if meta_annotations is None:
        ops.append({"op": "add", "path": "/metadata/annotations", "value": {}})
    ops += [
        {"op": "add", "path": f"/metadata/annotations/{pointer(key)}", "value": value}
        for key, value in _ui_annotations(membership, workflow).items()
    ]
    return ops


def _template_task(workflow: Mapping[str, Any], template: str) -> str:
    """The task a replica template runs (its ``diengine/task-name`` label: ``<task>`` or ``<task>-short``)."""
    for t in workflow["spec"]["templates"]:
        if t.get("name") == template:
            return str(((t.get("metadata") or {}).get("labels") or {}).get(LABEL_TASK_NAME, template))
    return template


def _drop_tasks(workflow: Mapping[str, Any], slots: DagSlots) -> frozenset[str]:
    """Tasks whose live DAG tasks go on when they fail (failurePolicy DropReplica): new replicas do too."""
    tasks = workflow["spec"]["templates"][slots.template_index]["dag"].get("tasks") or []
    return frozenset(
        _template_task(workflow, str(tasks[pos]["template"]))
        for pos in slots.live.values()
        if (tasks[pos].get("continueOn") or {}).get("failed")
    )


def _ui_annotations(membership: Membership, workflow: Mapping[str, Any]) -> dict[str, str]:
    """The Argo UI annotations for ``membership`` (description, columns, generation): task types read
    from the task templates' labels."""
    meta = workflow.get("metadata") or {}
    tasks = [
        (str(t["name"]), str(labels[LABEL_TASK_TYPE]), len(membership.of_task(str(t["name"]))))
        for t in workflow["spec"]["templates"]
        if LABEL_TASK_TYPE in (labels := (t.get("metadata") or {}).get("labels") or {})
        and labels.get(LABEL_TASK_NAME) == t["name"]  # a task's <task>-short template is not another task
    ]
    training = (meta.get("annotations") or {}).get(ANNOTATION_TRAINING_SUMMARY)
    job_id = f"{meta.get('namespace')}/{meta.get('name')}"
    return ui_annotations(job_id, tasks, membership.generation, training if isinstance(training, str) else None)
