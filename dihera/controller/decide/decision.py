"""What decisions answer (pure data): a phase policy's phase, message and cause; an Event to post."""

from __future__ import annotations

from dataclasses import dataclass

from dihera.constants import Phase

__all__ = ["Event", "PhaseDecision"]


@dataclass(frozen=True)
class PhaseDecision:
    phase: Phase
    message: str
    #: Machine-readable cause (``WorkflowDeleted``, ``BackoffLimitExceeded``...): the reason of the phase's
    #: condition and of its Event; None: ``Job<Phase>``.
    cause: str | None = None


@dataclass(frozen=True)
class Event:
    """A Kubernetes Event to post about the job once its status is written."""

    type: str
    reason: str
    message: str
