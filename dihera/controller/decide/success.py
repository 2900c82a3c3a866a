"""``spec.successPolicy`` and DI-engine's end (pure): whether what the replicas did makes the job Succeeded
(the phase policy :func:`succeeded`).

Without a successPolicy, a job whose tasks include DI-engine's learner or evaluator ends when they end:
DI-engine's evaluator stops training at the stop value and tells every peer it is connected to
(``finish``, once, best effort); a collector that joined later never hears it and would collect
forever. So once every learner and evaluator replica has Succeeded, the collectors get
``diengine/finish-grace-seconds`` (90) to end too (a collector waits up to 60 s in DI-engine before it
sees ``finish``); then the job Succeeds and those still running are stopped (:func:`finish_grace_left`
says when the pass is due). Replicas of ``none`` tasks (a Redis broker, a dashboard) are not waited
for. Jobs without learner or evaluator tasks Succeed when every replica has (DI-orchestrator's rule).

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

from dihera.constants import ANNOTATION_FINISH_GRACE, DEFAULT_FINISH_GRACE, Phase
from dihera.controller.decide.deadline import seconds_left
from dihera.controller.decide.decision import PhaseDecision
from dihera.controller.decide.replicas import ReplicaState
from dihera.model import DIJob, SuccessOperator, SuccessPolicy, TaskType
from dihera.objects import PodPhase, WorkflowPhase

if TYPE_CHECKING:
    from dihera.controller.decide.facts import Facts

__all__ = ["ENDING_TYPES", "finish_grace", "finish_grace_left", "succeeded", "success_reached"]

#: Task types whose end is DI-engine's end (the evaluator stops training, the learner follows ``finish``).
ENDING_TYPES = frozenset({TaskType.LEARNER, TaskType.EVALUATOR})


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
    """The phase policy: the Workflow Succeeded, or the successPolicy is met, or (none given) DI-engine's
    learners and evaluators ended and the grace of the others passed → Succeeded."""
    if f.workflow_status.get("phase") == WorkflowPhase.SUCCEEDED:
        return PhaseDecision(Phase.SUCCEEDED, f"all {len(f.kept)} replicas succeeded")
    why = success_reached(f.success_policy, f.kept)
    if why is None and f.success_policy is None:
        why = _di_engine_ended(f)
    return None if why is None else PhaseDecision(Phase.SUCCEEDED, why)


def finish_grace(job: DIJob) -> int:
    """``diengine/finish-grace-seconds`` (validated), else :data:`DEFAULT_FINISH_GRACE`."""
    value = job.annotations.get(ANNOTATION_FINISH_GRACE)
    return int(value) if value is not None else DEFAULT_FINISH_GRACE


def _ended(f: Facts) -> tuple[list[ReplicaState], str | None]:
    """DI-engine's learner and evaluator replicas, and when the last of them ended (None: they have not
    all Succeeded, the job has none, or a successPolicy decides)."""
    job = f.view.job
    if job is None or f.success_policy is not None:
        return [], None
    ending = {t.name for t in job.tasks if t.type in ENDING_TYPES}
    enders = [s for s in f.kept if s.task in ending]
    if not enders or not all(_succeeded(s) for s in enders) or any(s.ended_at is None for s in enders):
        return enders, None
    return enders, max(str(s.ended_at) for s in enders)


def _collecting(f: Facts) -> list[ReplicaState]:
    """The collector replicas that have not Succeeded: what the grace after DI-engine's end waits for."""
    job = f.view.job
    collectors = {t.name for t in job.tasks if t.type == TaskType.COLLECTOR} if job is not None else set()
    return [s for s in f.kept if s.task in collectors and not _succeeded(s)]


def finish_grace_left(f: Facts) -> float | None:
    """Seconds until the collectors' grace after DI-engine's end runs out (the pass then due), else None."""
    _, ended = _ended(f)
    if ended is None or f.view.job is None or not _collecting(f):
        return None
    left = seconds_left(ended, finish_grace(f.view.job), f.now)
    return left if left is not None and left > 0 else None


def _di_engine_ended(f: Facts) -> str | None:
    enders, ended = _ended(f)
    if ended is None or f.view.job is None or finish_grace_left(f) is not None:
        return None
    tasks = ", ".join(dict.fromkeys(s.task for s in enders))
    why = [f"every replica of {tasks} succeeded (DI-engine's end)"]
    if collecting := _collecting(f):
        why.append(
            f"{len(collecting)} collector replica(s) still running {finish_grace(f.view.job)} s later (they never "
            "heard DI-engine's finish, e.g. one that joined late) are stopped as cleanPodPolicy says"
        )
    enders_or_collectors = {*enders, *collecting}
    others = [s for s in f.kept if s not in enders_or_collectors and not _succeeded(s)]
    if others:
        names = ", ".join(dict.fromkeys(s.task for s in others))
        why.append(f"{len(others)} replica(s) of {names} (not DI-engine's roles) are stopped as cleanPodPolicy says")
    return "; ".join(why)
