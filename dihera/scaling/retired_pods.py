"""The pods of retired replicas, and which of them can be deleted now (pure).

A retired replica's pod may be deleted only once Argo has *acted on* the tombstone: until Argo operates on
the Workflow with the DAG task's template swapped for ``dihera-retired``, the task's node is still Running
with its pod template, and a pod deleted then is a crash to Argo, which starts a new pod for the task
(docs/scaling.md, experiment b3) that nothing would delete. Once the DAG task's node is fulfilled
(``Succeeded`` at once for a tombstone, or already finished before), Argo never starts a pod for it again
(experiment t). The Workflow JSON patch alone does not tell: Argo's workflow informer may deliver it after
the pod's deletion (seen under load: the retired replicas came back and the job never settled).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from dihera.constants import LABEL_POD
from dihera.objects import FULFILLED_NODE_PHASES, TERMINAL_POD_PHASES, metadata, owned_by
from dihera.scaling.dag import retired_dag_tasks, workflow_nodes
from dihera.shapes.pod import Pod
from dihera.shapes.workflow import Workflow

__all__ = ["RetiredPods", "retired_pods"]


@dataclass(frozen=True)
class RetiredPods:
    """Live pods of retired replicas: ``ready`` to delete (Argo finished the tombstone), ``waiting`` for Argo;
    ``uids``: each one's uid, the precondition of its deletion (a pod created again under the name meanwhile
    is not the one decided on, and is kept)."""

    ready: tuple[str, ...] = ()
    waiting: tuple[str, ...] = ()
    uids: Mapping[str, str] = field(default_factory=dict, compare=False)


def _fulfilled_dag_tasks(workflow: Workflow) -> frozenset[str]:
    """DAG task names whose node (``<workflow>.<task>``) Argo has finished."""
    prefix = f"{(workflow.get('metadata') or {}).get('name')}."
    return frozenset(
        name[len(prefix) :]
        for node in workflow_nodes(workflow).values()
        if (name := str(node.get("name") or "")).startswith(prefix) and node.get("phase") in FULFILLED_NODE_PHASES
    )


def retired_pods(job_name: str, workflow: Workflow, pods: Iterable[Pod]) -> RetiredPods:
    """The job's pods still alive on a retired DAG task, split by whether Argo finished that task's node.

    A replica's hostname (label ``diengine/pod``) is ``<job>-<task>-<index>``, its DAG task ``<task>-<index>``.
    Only pods the Workflow owns (an ownerReference to its uid) are the job's: a pod anyone labelled like a
    replica is left out, as are pods already finished or being deleted.
    """
    retired = retired_dag_tasks(workflow)
    if not retired:
        return RetiredPods()  # every pass of a job never scaled down: no pod to look at
    by_host = {f"{job_name}-{n}": n for n in retired}
    done = _fulfilled_dag_tasks(workflow)
    owner = metadata(workflow).get("uid")
    ready: list[str] = []
    waiting: list[str] = []
    uids: dict[str, str] = {}
    for pod in pods:
        meta = pod.get("metadata") or {}
        phase = (pod.get("status") or {}).get("phase")
        task = by_host.get((meta.get("labels") or {}).get(LABEL_POD, ""))
        if task is None or phase in TERMINAL_POD_PHASES or meta.get("deletionTimestamp") or not owned_by(pod, owner):
            continue
        (ready if task in done else waiting).append(str(meta["name"]))
        if meta.get("uid"):
            uids[str(meta["name"])] = str(meta["uid"])
    return RetiredPods(tuple(sorted(ready)), tuple(sorted(waiting)), uids)
