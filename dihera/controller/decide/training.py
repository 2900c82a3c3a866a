"""``spec.trainingPolicy`` as a phase policy (pure): the job's RL figures end it.

:func:`training_ended` reads ``status.training`` (written by the di-server from the replicas' reports) and asks
:func:`dihera.rl.policies.judge_training`: a NaN or infinite figure → Failed (``NonFiniteMetric``), a target
reached → Succeeded (``TrainingTargetReached``), a plateau → Succeeded (``TrainingPlateaued``). It runs after the
failure policies and before :func:`~dihera.controller.decide.success.succeeded` (``phase.POLICIES``): a job that
failed on its own is Failed for that, and one that reached its target Succeeds even if its program would never
stop. The replicas still running are then stopped as cleanPodPolicy says, as a successPolicy's are.
"""

from __future__ import annotations

from collections.abc import Mapping

from dihera.constants import Phase
from dihera.controller.decide.decision import PhaseDecision
from dihera.controller.decide.records import Facts
from dihera.rl.policies import judge_training

__all__ = ["training_ended"]


def training_ended(f: Facts) -> PhaseDecision | None:
    """The phase policy: the training policy's verdict on ``status.training``, or None (no policy, no figures,
    or the job goes on)."""
    job = f.view.job
    training = f.view.status.get("training")
    if job is None or job.training_policy is None or not isinstance(training, Mapping):
        return None
    verdict = judge_training(job.training_policy, training)
    if verdict is None:
        return None
    return PhaseDecision(Phase.SUCCEEDED if verdict.succeeded else Phase.FAILED, verdict.message, verdict.reason)
