"""cleanPodPolicy when a job ends (pure): which pods to delete, and whether to stop the Workflow.

| policy  | pods deleted when the job is Succeeded/Failed | Workflow |
|---------|-----------------------------------------------|----------|
| Running | those still Pending or Running                | ``spec.shutdown: Terminate`` if still running (see below) |
| All     | every pod of the job                          | as Running |
| None    | none                                          | left alone |

A Failed job's running Workflow is always stopped. A Succeeded job's is stopped only while some of
its pods still run (a ``successPolicy`` ended the job before every replica finished); otherwise every
replica is done and Argo is about to mark the Workflow Succeeded itself.

Pods are deleted rather than left to Argo's terminate, which needs ``pods/exec`` into a kubelet.
The Workflow is stopped first so that Argo's retryStrategy does not replace the deleted pods.

A pod whose user containers have all exited 0 is finishing, not running: Argo's wait container (and the
container that collects ``spec.artifacts``, docs/artifacts.md) is storing its outputs and its log, and the
pod ends by itself. It is left to end (deleting it would lose what it stores and make Argo mark its node
failed); under ``All`` it is deleted once it has. Under ``All`` an ended pod is deleted only once Argo will
not make it again: the Workflow completed or stopped (a pod deleted before Argo recorded its end is "missing"
to Argo, which creates it anew).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dihera.constants import TERMINAL_PHASES, Phase
from dihera.controller.decide.replicas import finished_ok
from dihera.model import CleanPodPolicy
from dihera.objects import LIVE_POD_PHASES, PodPhase, WorkflowPhase, deleting, metadata, pod_phase, workflow_phase
from dihera.shapes.pod import Pod
from dihera.shapes.workflow import Workflow

__all__ = ["CleanupPlan", "plan_cleanup"]

_COMPLETED_WORKFLOW = frozenset({WorkflowPhase.SUCCEEDED, WorkflowPhase.FAILED, WorkflowPhase.ERROR})


@dataclass(frozen=True)
class CleanupPlan:
    shutdown_workflow: bool = False
    delete_pods: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.shutdown_workflow and not self.delete_pods


def plan_cleanup(
    policy: CleanPodPolicy,
    phase: str,
    workflow: Workflow | None,
    pods: Sequence[Pod],
) -> CleanupPlan:
    """What to do for a job in ``phase``; nothing unless it is Succeeded or Failed."""
    if phase not in TERMINAL_PHASES or policy is CleanPodPolicy.NONE:
        return CleanupPlan()
    phases = _phases(pods)
    live = any(p in LIVE_POD_PHASES for p in phases.values())
    shutdown = workflow is not None and (phase == Phase.FAILED or live) and _running(workflow)
    ended = policy is CleanPodPolicy.ALL and _settled(workflow, shutdown)
    doomed = [name for name, p in phases.items() if p in LIVE_POD_PHASES or ended]
    return CleanupPlan(shutdown, tuple(sorted(doomed)))


def _phases(pods: Sequence[Pod]) -> dict[str, PodPhase]:
    """Name → phase of the pods cleanup may act on: neither going away nor finishing."""
    return {
        metadata(p)["name"]: pod_phase(p) or PodPhase.PENDING for p in pods if not deleting(p) and not _finishing(p)
    }


def _settled(workflow: Workflow | None, shutdown: bool) -> bool:
    """Argo will not make an ended pod again: the Workflow completed or is told to stop (this plan's shutdown
    is written before its deletions). Before, a pod whose end Argo has not recorded yet is "missing" to it."""
    return workflow is None or shutdown or not _running(workflow)


def _finishing(pod: Pod) -> bool:
    """Still live, its user containers all exited 0: Argo's wait container is storing its outputs and log."""
    return pod_phase(pod) in LIVE_POD_PHASES and finished_ok(pod)


def _running(workflow: Workflow) -> bool:
    """Whether Argo still runs the Workflow and it was not told to stop yet."""
    return (
        workflow_phase(workflow) not in _COMPLETED_WORKFLOW and workflow.get("spec", {}).get("shutdown") != "Terminate"
    )
