"""Why a replica is stuck (pure): what its pod's status says keeps it from running.

| reason | seen in the pod status |
|---|---|
| Unschedulable | condition ``PodScheduled`` False, reason Unschedulable (the scheduler's message) |
| ErrImagePull, ImagePullBackOff, InvalidImageName | a container waiting with that reason |
| CreateContainerConfigError, CreateContainerError, RunContainerError | a container waiting with that reason |
| CrashLoopBackOff | a container waiting with that reason |
| OOMKilled | a container terminated (now or last time) with that reason |

Containers are looked at in the order init containers, containers; the first problem found names the pod's.
"""

from __future__ import annotations

from dihera.constants import STUCK_WAITING_REASONS, StuckReason
from dihera.objects import deleting
from dihera.shapes.pod import ContainerStatus, Pod, PodStatus

__all__ = ["pod_problem"]


def _unschedulable(status: PodStatus) -> tuple[str, str] | None:
    for cond in status.get("conditions") or []:
        unscheduled = cond.get("type") == "PodScheduled" and cond.get("status") == "False"
        if unscheduled and cond.get("reason") == StuckReason.UNSCHEDULABLE:
            return StuckReason.UNSCHEDULABLE.value, str(cond.get("message") or "no node fits the pod")
    return None


def _memory_limit(pod: Pod, container: str) -> str | None:
    spec = pod.get("spec") or {}
    for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        if c.get("name") == container:
            limit = ((c.get("resources") or {}).get("limits") or {}).get("memory")
            return str(limit) if limit is not None else None
    return None


def _container_problem(pod: Pod, cs: ContainerStatus) -> tuple[str, str] | None:
    name = cs.get("name") or "?"
    waiting = (cs.get("state") or {}).get("waiting") or {}
    if waiting.get("reason") in STUCK_WAITING_REASONS:
        detail = waiting.get("message") or ""
        return str(waiting["reason"]), f"container {name}" + (f": {detail}" if detail else "")
    for state in (cs.get("state"), cs.get("lastState")):
        term = (state or {}).get("terminated") or {}
        if term.get("reason") == StuckReason.OOM_KILLED:
            limit = _memory_limit(pod, str(name))
            within = f" (memory limit {limit})" if limit else ""
            return StuckReason.OOM_KILLED.value, f"container {name} was killed for using too much memory{within}"
    return None


def pod_problem(pod: Pod | None) -> tuple[str, str] | None:
    """``(reason, message)`` of what keeps the pod from running, or None when nothing does."""
    if pod is None or deleting(pod):
        return None
    status = pod.get("status") or {}
    found = _unschedulable(status)
    if found is not None:
        return found
    for cs in [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]:
        found = _container_problem(pod, cs)
        if found is not None:
            return found
    return None
