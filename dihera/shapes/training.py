"""The shape of a DIJob's ``status.training``: the RL figures its replicas report, merged (pure types).

Written by the di-server from the replicas' reports (at most once a second per job); read by the
controller's autoscaling and metric policies, ``kubectl get dijob``'s columns and the di-server's
learning curve. Every field is optional: a stock DI-engine program reports nothing and keeps working.
"""

from __future__ import annotations

from typing import TypedDict

__all__ = ["CurvePoint", "Evaluation", "PolicyLag", "ReportedAt", "TrainingStatus"]


class PolicyLag(TypedDict, total=False):
    """Learner iteration minus the model iteration the collectors act with, over the collectors."""

    p50: float
    max: int


class Evaluation(TypedDict, total=False):
    """The newest and the best evaluation return, with their learner iterations."""

    #: the newest evaluation's mean return
    value: float
    iteration: int
    best: float
    bestIteration: int
    #: evaluations so far
    count: int


class CurvePoint(TypedDict, total=False):
    """One point of the learning curve (newest last, bounded)."""

    iteration: int
    #: an evaluation's return at this iteration, when one was reported
    value: float
    envStepsPerSecond: float


class ReportedAt(TypedDict, total=False):
    """When each role last reported (RFC 3339)."""

    learner: str
    collector: str
    evaluator: str


class TrainingStatus(TypedDict, total=False):
    """``status.training``."""

    #: the learner's train iteration
    iteration: int
    #: train iterations per second
    iterationsPerSecond: float
    #: env steps collected, all collectors together
    envSteps: int
    envStepsPerSecond: float
    #: samples the learner consumed per second
    samplesPerSecond: float
    #: samples consumed per env step collected (samplesPerSecond / envStepsPerSecond)
    replayRatio: float
    #: share of the learner's wall time spent waiting for data, in [0, 1]
    dataWaitFraction: float
    policyLag: PolicyLag
    evaluation: Evaluation
    #: the figures last reported as NaN or infinite (e.g. "loss", "return")
    nonFinite: list[str]
    curve: list[CurvePoint]
    reportedAt: ReportedAt
