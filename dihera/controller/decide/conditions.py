"""DIJob conditions: one per phase reached, the current one True (pure).

A condition's ``lastTransitionTime`` changes only when its status flips; ``lastUpdateTime`` whenever
it is rewritten (status or message). Its ``reason`` is the decision's cause where one exists, as the
Kubernetes Job's conditions say why (``DeadlineExceeded``, ``BackoffLimitExceeded``, ``WorkflowDeleted``,
``Evicted``...), else ``Job<Phase>`` (DI-orchestrator's).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dihera.constants import condition_reason

__all__ = ["set_phase_condition"]


def set_phase_condition(
    conditions: Sequence[Mapping[str, Any]], phase: str, message: str, now: str, cause: str | None = None
) -> list[dict[str, Any]]:
    """The conditions after the job is (still) in ``phase``: that one True, every other one False;
    ``cause``: the reason of a condition that becomes True (None: ``Job<Phase>``)."""
    reason = cause or condition_reason(phase)
    out: list[dict[str, Any]] = []
    found = False
    for old in conditions:
        cond = dict(old)
        if cond.get("type") == phase:
            found = True
            if cond.get("status") != "True":
                cond.update(status="True", lastTransitionTime=now, lastUpdateTime=now)
                cond.update(reason=reason, message=message)
            elif cond.get("message") != message:
                cond.update(message=message, lastUpdateTime=now)
        elif cond.get("status") == "True":
            cond.update(status="False", lastTransitionTime=now, lastUpdateTime=now)
        out.append(cond)
    if not found:
        out.append(
            {
                "type": phase,
                "status": "True",
                "reason": reason,
                "message": message,
                "lastUpdateTime": now,
                "lastTransitionTime": now,
            }
        )
    return out
