"""DIJob conditions: one per phase reached, the current one True (pure).

A condition's ``lastTransitionTime`` changes only when its status flips; ``lastUpdateTime`` whenever it is
rewritten (status or message; a new message brings its decision's reason). The True one, the phase's, is
always the last: the newest condition a reader finds says what the phase says. Its ``reason`` is the
decision's cause where one exists, as the Kubernetes Job's conditions say why (``DeadlineExceeded``,
``BackoffLimitExceeded``, ``WorkflowDeleted``, ``Evicted``...), else ``Job<Phase>`` (DI-orchestrator's).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dihera.constants import condition_reason

__all__ = ["set_phase_condition"]


def set_phase_condition(
    conditions: Sequence[Mapping[str, Any]], phase: str, message: str, now: str, cause: str | None = None
) -> list[dict[str, Any]]:
    """The conditions after the job is (still) in ``phase``: that one True and last, every other one False;
    ``cause``: the reason of a condition that becomes True (None: ``Job<Phase>``)."""
    reason = cause or condition_reason(phase)
    others: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for old in conditions:
        cond = dict(old)
        if cond.get("type") == phase:
            current = cond
        else:
            if cond.get("status") == "True":
                cond.update(status="False", lastTransitionTime=now, lastUpdateTime=now)
            others.append(cond)
    if current is None:
        current = {"type": phase, "status": "True", "reason": reason, "message": message}
        current.update(lastUpdateTime=now, lastTransitionTime=now)
    elif current.get("status") != "True":
        current.update(status="True", lastTransitionTime=now, lastUpdateTime=now, reason=reason, message=message)
    elif current.get("message") != message:  # the reason follows the decision (JobPending → ObjectConflict)
        current.update(message=message, reason=reason, lastUpdateTime=now)
    return [*others, current]
