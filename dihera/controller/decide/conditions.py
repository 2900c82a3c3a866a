"""DIJob conditions: one per phase reached, the current one True (pure).

A condition's ``lastTransitionTime`` changes only when its status flips; ``lastUpdateTime`` whenever it is
rewritten (status or message; a new message brings its decision's reason). The True one, the phase's, is
always the last: the newest condition a reader finds says what the phase says. Conditions that are not a
phase's (collector autoscaling's ``CollectorsAutoscaled``, :func:`set_condition`) keep their own status. Its
``reason`` is the decision's cause where one exists, as the Kubernetes Job's conditions say why (``DeadlineExceeded``,
``BackoffLimitExceeded``, ``WorkflowDeleted``, ``Evicted``...), else ``Job<Phase>`` (DI-orchestrator's).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dihera.constants import Phase, condition_reason

__all__ = ["phase_condition", "set_condition", "set_phase_condition"]

_PHASES = frozenset(p.value for p in Phase)


def phase_condition(status: Mapping[str, Any]) -> Mapping[str, Any]:
    """The phase's True condition of ``status``, or {} (other conditions, collector autoscaling's, may be True)."""
    conditions = status.get("conditions") or []
    return next((c for c in conditions if c.get("status") == "True" and c.get("type") in _PHASES), {})


def set_condition(
    conditions: Sequence[Mapping[str, Any]], type_: str, status: str, reason: str, message: str, now: str
) -> list[dict[str, Any]]:
    """``conditions`` with a condition that is not a phase's (``CollectorsAutoscaled``) set: in its place, or
    before the phase's (which stays last); ``lastTransitionTime`` kept unless its status flips."""
    out = [dict(c) for c in conditions]
    new = {"type": type_, "status": status, "reason": reason, "message": message}
    for cond in out:
        if cond.get("type") == type_:
            if cond.get("status") != status:
                cond["lastTransitionTime"] = now
            if any(cond.get(k) != v for k, v in new.items()):
                cond.update(new, lastUpdateTime=now)
            return out
    new.update(lastUpdateTime=now, lastTransitionTime=now)
    at = len(out) - 1 if out and out[-1].get("type") in _PHASES else len(out)
    return [*out[:at], new, *out[at:]]


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
            if cond.get("status") == "True" and cond.get("type") in _PHASES:
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
