"""DIJob conditions: one per phase reached, the current one True (pure).

A condition's ``lastTransitionTime`` changes only when its status flips; ``lastUpdateTime`` whenever
it is rewritten (status or message).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dihera.constants import condition_reason

__all__ = ["set_phase_condition"]


def set_phase_condition(
    conditions: Sequence[Mapping[str, Any]], phase: str, message: str, now: str
) -> list[dict[str, Any]]:
    """The conditions after the job is (still) in ``phase``: that one True, every other one False."""
    out: list[dict[str, Any]] = []
    found = False
    for old in conditions:
        cond = dict(old)
        if cond.get("type") == phase:
            found = True
            if cond.get("status") != "True":
                cond.update(status="True", lastTransitionTime=now, lastUpdateTime=now)
                cond.update(reason=condition_reason(phase), message=message)
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
                "reason": condition_reason(phase),
                "message": message,
                "lastUpdateTime": now,
                "lastTransitionTime": now,
            }
        )
    return out
