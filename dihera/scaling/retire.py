"""A scale-down's last step: delete the retired replicas' pods as Argo finishes their tombstones (a bounded watch).

Argo may act on the Workflow patch seconds after it was written (its informer lags under load); a pod deleted
before would be started again (:mod:`dihera.scaling.retired_pods` decides which pods may go). So the one
Workflow is watched from the version read or written, for up to ``wait`` seconds, and each pod deleted once a
write of Argo's shows its tombstone finished; a pod still waiting then is left to the controller, which deletes
it once its watch shows the tombstone finished. The cluster is reached through
:class:`dihera.scaling.ports.RetirementStore`; the clock is injected.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from contextlib import closing

from dihera.constants import LABEL_JOB
from dihera.naming import workflow_name
from dihera.scaling.dag import retired_dag_tasks
from dihera.scaling.ports import RetirementStore
from dihera.scaling.retired_pods import RetiredPods, retired_pods
from dihera.shapes.workflow import Workflow, as_workflow

__all__ = ["RETIRE_WAIT", "RETIRE_WAIT_LOGGED", "delete_retired_pods"]

log = logging.getLogger(__name__)

#: How long a scale-down waits for Argo to finish the retired replicas' tombstones before deleting their pods
#: (seconds; Argo acts within a pass or two, ~1 s, idle, and took several seconds on a loaded machine). A pod
#: still waiting then is deleted by the controller once Argo has finished its tombstone.
RETIRE_WAIT = 60.0
#: A wait for Argo at least this long is logged (seconds).
RETIRE_WAIT_LOGGED = 1.0


def delete_retired_pods(
    store: RetirementStore,
    namespace: str,
    name: str,
    workflow: Workflow,
    *,
    wait: float = RETIRE_WAIT,
    clock: Callable[[], float] = time.monotonic,
) -> list[str]:
    """Delete the live pods of job ``name``'s retired replicas, each once Argo has finished its tombstone;
    the names deleted, sorted. ``workflow``: the Workflow as last read or written (watched from its version).
    """
    if not retired_dag_tasks(workflow):
        return []  # no replica retired yet: no pod to look for (a big job's pods are megabytes to list)
    pods = store.list_pods(namespace, f"{LABEL_JOB}={name}")
    found = retired_pods(name, workflow, pods)
    deadline = clock() + wait
    deleted: list[str] = []
    waited = 0.0  # seconds spent waiting for Argo's writes
    updates = store.watch_workflow(namespace, workflow_name(name), workflow["metadata"]["resourceVersion"], wait)
    with closing(updates):
        while True:
            if found.ready:  # only pods the Workflow owns, each under its uid (dihera.scaling.retired_pods)
                store.delete_pods(namespace, found.ready, found.uids)
                deleted += found.ready
            if not found.waiting or clock() >= deadline:
                break
            before = clock()
            newer = next(updates, None)
            waited += clock() - before
            if newer is None:
                break
            waiting = set(found.waiting)
            found = retired_pods(name, as_workflow(newer), [p for p in pods if p["metadata"]["name"] in waiting])
    _report(namespace, name, found, deleted, waited)
    return sorted(deleted)


def _report(namespace: str, name: str, found: RetiredPods, deleted: list[str], waited: float) -> None:
    extra = {"job": f"{namespace}/{name}"}
    if found.waiting:
        log.warning(
            "Argo has not finished the retired replicas of pods %s after %.1fs; left to the controller",
            list(found.waiting),
            waited,
            extra=extra,
        )
    elif deleted and waited >= RETIRE_WAIT_LOGGED:
        log.info("deleted %d retired pod(s); waited %.1fs for Argo", len(deleted), waited, extra=extra)
