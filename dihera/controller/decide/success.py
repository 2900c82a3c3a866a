"""``spec.successPolicy`` (pure): whether what the replicas did makes the job Succeeded (the phase policy
:func:`succeeded`).

| successPolicy            | the job Succeeds when                                        |
|--------------------------|--------------------------------------------------------------|
| none (default)           | every replica succeeded                                      |
| All, targetTasks T       | every replica of the tasks T succeeded                       |
| Any, targetTasks T       | one replica of the tasks T succeeded                         |

No ``targetTasks`` means every task. Replicas outside the decision that still run are stopped by
``cleanPodPolicy`` once the job is Succeeded; since the status is final then, stopping them is
neither a failure nor a restart. A Workflow that Argo marked Succeeded is a success in every case.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from dihera.constants import Phase
from dihera.controller.decide.decision import PhaseDecision
from dihera.controller.decide.replicas import ReplicaState
from dihera.model import SuccessOperator, SuccessPolicy
from dihera.objects import PodPhase, WorkflowPhase

if TYPE_CHECKING:
    from dihera.controller.decide.facts import Facts

__all__ = ["succeeded", "success_reached"]


def _succeeded(state: ReplicaState) -> bool:
    return state.pod_phase == PodPhase.SUCCEEDED


def success_reached(policy: SuccessPolicy | None, states: Sequence[ReplicaState]) -> str | None:
    """Why the job has Succeeded (the phase message), or None while it has not."""
    if policy is None:
        if states and all(_succeeded(s) for s in states):
            return f"all {len(states)} replicas succeeded"
        return None
    tasks = policy.target_tasks or tuple(dict.fromkeys(s.task for s in states))
    targets = [s for s in states if s.task in tasks]
    unfinished = sum(1 for s in states if not _succeeded(s))
    rest = f"; {unfinished} unfinished replica(s) are stopped as cleanPodPolicy says" if unfinished else ""
    met = _any if policy.operator is SuccessOperator.ANY else _all
    why = met(targets, ", ".join(tasks))
    return None if why is None else why + rest


def _any(targets: Sequence[ReplicaState], tasks: str) -> str | None:
    done = [s for s in targets if _succeeded(s)]
    return f"replica {done[0].name} of {tasks} succeeded (successPolicy Any)" if done else None


def _all(targets: Sequence[ReplicaState], tasks: str) -> str | None:
    if not targets or not all(_succeeded(s) for s in targets):
        return None
    return f"all {len(targets)} replicas of {tasks} succeeded (successPolicy All)"


def succeeded(f: Facts) -> PhaseDecision | None:
    """The phase policy: the Workflow Succeeded, or the successPolicy is met → Succeeded."""
    if f.workflow_status.get("phase") == WorkflowPhase.SUCCEEDED:
        return PhaseDecision(Phase.SUCCEEDED, f"all {len(f.kept)} replicas succeeded")
    why = success_reached(f.success_policy, f.kept)
    return None if why is None else PhaseDecision(Phase.SUCCEEDED, why)
