"""Collector autoscaling's decision in the job's status (pure): its condition and its Events.

The controller's :class:`~dihera.controller.autoscaler.Autoscaler` decides (:mod:`dihera.rl.autoscale`) and
applies a change through the scale path before the status is computed; :func:`with_autoscaling` then records the
decision in the pass's one status write: the ``CollectorsAutoscaled`` condition (True while autoscaling acts on
fresh figures, False while it holds for missing or stale figures or a refused change; its reason an
:class:`~dihera.constants.AutoscaleReason`, its message the figures) and an Event for every change, refusal,
limit and stale series (a hold for the same reason as before posts none: a job within target is quiet).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import cast

from dihera.constants import CONDITION_AUTOSCALING, EVENT_NORMAL, EVENT_WARNING, AutoscaleReason
from dihera.controller.decide.conditions import set_condition
from dihera.controller.decide.decision import Event
from dihera.controller.decide.status import StatusUpdate
from dihera.rl.autoscale import AutoscaleDecision
from dihera.shapes.dijob import Condition, DIJobStatus

__all__ = ["with_autoscaling"]

#: Reasons whose condition is False: autoscaling cannot act.
_HELD = frozenset({AutoscaleReason.NO_FIGURES, AutoscaleReason.STALE_FIGURES, AutoscaleReason.SCALE_REFUSED})
#: Reasons that post an Event when they are new (a change posts one every time).
_TOLD = {
    AutoscaleReason.SCALE_LIMITED: EVENT_NORMAL,
    AutoscaleReason.STALE_FIGURES: EVENT_WARNING,
    AutoscaleReason.SCALE_REFUSED: EVENT_WARNING,
}


def with_autoscaling(update: StatusUpdate, decision: AutoscaleDecision | None, now: str) -> StatusUpdate:
    """``update`` with ``decision`` recorded (None: autoscaling did not run this pass; nothing changes)."""
    if decision is None:
        return update
    old = update.status.get("conditions") or []
    before: Mapping[str, object] = next((c for c in old if c.get("type") == CONDITION_AUTOSCALING), {})
    flag = "False" if decision.reason in _HELD else "True"
    conditions = set_condition(old, CONDITION_AUTOSCALING, flag, decision.reason.value, decision.message, now)
    status: DIJobStatus = {**update.status, "conditions": [cast(Condition, c) for c in conditions]}
    events = list(update.events)
    if decision.changed:
        events.append(Event(EVENT_NORMAL, decision.reason.value, decision.message))
    elif decision.reason in _TOLD and before.get("reason") != decision.reason:
        events.append(Event(_TOLD[decision.reason], decision.reason.value, decision.message))
    changed = update.changed or status != update.status
    return dataclasses.replace(update, status=status, changed=changed, events=tuple(events))
