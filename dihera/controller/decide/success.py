"""``spec.successPolicy`` and DI-engine's end (pure): whether what the replicas did makes the job Succeeded
(the phase policy :func:`succeeded`).

Without a successPolicy, a job whose tasks include DI-engine's learner or evaluator ends when they end:
DI-engine's evaluator stops training at the stop value and tells every peer it is connected to
(``finish``, once, best effort); a collector that joined later never hears it and would collect
forever. So once every learner and evaluator replica has Succeeded, the collectors get
``diengine/finish-grace-seconds`` (90) to end too (a collector waits up to 60 s in DI-engine before it
sees ``finish``); then the job Succeeds and those still running are stopped (:func:`finish_grace_left`
says when the pass is due). In a job with evaluators, every evaluator replica Succeeded is DI-engine's
end as well, and the learners get the same grace: a learner that failed as the job ended (evicted as its
last save filled its disk, say) is restarted by Argo with no evaluator left to end it. Replicas of
``none`` tasks (a Redis broker, a dashboard) are not waited for. Jobs without learner or evaluator tasks
Succeed when every replica has (DI-orchestrator's rule).

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

from dihera.constants import ANNOTATION_FINISH_GRACE, DEFAULT_FINISH_GRACE, Phase
from dihera.controller.decide.deadline import seconds_left
from dihera.controller.decide.decision import PhaseDecision
from dihera.controller.decide.records import Facts
from dihera.controller.decide.replicas import ReplicaState
from dihera.model import DIJob, SuccessOperator, SuccessPolicy, TaskType
from dihera.objects import PodPhase, WorkflowPhase

__all__ = ["ENDING_TYPES", "finish_grace", "finish_grace_left", "succeeded", "success_reached"]

#: Task types whose end is DI-engine's end (the evaluator stops training, the learner follows ``finish``).
ENDING_TYPES = frozenset({TaskType.LEARNER, TaskType.EVALUATOR})
#: The evaluators alone: in a job that has them, their end is DI-engine's end.
_JUDGES = frozenset({TaskType.EVALUATOR})
#: Task types given the grace after DI-engine's end to follow ``finish``.
_FINISHERS = frozenset({TaskType.LEARNER, TaskType.COLLECTOR})


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
    """The replicas whose end is DI-engine's end, and when the last of them ended (None: not yet, the job
    has no learner or evaluator, or a successPolicy decides). That is every learner and evaluator replica
    Succeeded, or, in a job with evaluators, every evaluator replica: the evaluator stops training at the
    stop value, so a learner that failed as the job ended (e.g. evicted by its final save) and was started
    again has nobody left to stop it."""
    job = f.view.job
    if job is None or f.success_policy is not None:
        return [], None
    for types in (ENDING_TYPES, _JUDGES):
        tasks = {t.name for t in job.tasks if t.type in types}
        enders = [s for s in f.kept if s.task in tasks]
        if enders and all(_succeeded(s) and s.ended_at is not None for s in enders):
            return enders, max(str(s.ended_at) for s in enders)
    return [], None


def _finishing(f: Facts) -> list[ReplicaState]:
    """The collector and learner replicas that have not Succeeded: what the grace after DI-engine's end
    waits for."""
    job = f.view.job
    tasks = {t.name for t in job.tasks if t.type in _FINISHERS} if job is not None else set()
    return [s for s in f.kept if s.task in tasks and not _succeeded(s)]


def finish_grace_left(f: Facts) -> float | None:
    """Seconds until the collectors' grace after DI-engine's end runs out (the pass then due), else None."""
    _, ended = _ended(f)
    if ended is None or f.view.job is None or not _finishing(f):
        return None
    left = seconds_left(ended, finish_grace(f.view.job), f.now)
    return left if left is not None and left > 0 else None


def _tasks(f: Facts, kind: TaskType) -> set[str]:
    return {t.name for t in f.view.job.tasks if t.type == kind} if f.view.job is not None else set()


def _di_engine_ended(f: Facts) -> str | None:
    enders, ended = _ended(f)
    if ended is None or f.view.job is None or finish_grace_left(f) is not None:
        return None
    tasks = ", ".join(dict.fromkeys(s.task for s in enders))
    why = [f"every replica of {tasks} succeeded (DI-engine's end)"]
    if finishing := _finishing(f):
        types = " and ".join(t.value for t in sorted(_FINISHERS) if any(s.task in _tasks(f, t) for s in finishing))
        why.append(
            f"{len(finishing)} {types} replica(s) still running {finish_grace(f.view.job)} s later (they never "
            "heard DI-engine's finish, e.g. one that joined late or was restarted after it) are stopped as "
            "cleanPodPolicy says"
        )
    ended_or_finishing = {*enders, *finishing}
    others = [s for s in f.kept if s not in ended_or_finishing and not _succeeded(s)]
    if others:
        names = ", ".join(dict.fromkeys(s.task for s in others))
        why.append(f"{len(others)} replica(s) of {names} (not DI-engine's roles) are stopped as cleanPodPolicy says")
    return "; ".join(why)
