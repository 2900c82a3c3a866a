"""Time-based decisions (pure), the whole concern: ``activeDeadlineSeconds`` (the phase policy
:func:`deadline_exceeded`) and ``ttlSecondsAfterFinished`` (:func:`ttl_left`).

Times are RFC 3339 strings as the status holds them (``2026-01-02T03:04:05Z``); ``now`` is passed in,
never read here. A pass returns the seconds until the nearest is due (:func:`next_wakeup`), and the work
queue runs the job's pass again then. A held job (suspended, queued) has no deadline; a resume starts
its clock again (:class:`~dihera.controller.decide.records.Facts`' ``start``).
"""

from __future__ import annotations

import datetime as dt

from dihera.constants import EventReason, Phase
from dihera.controller.decide.decision import PhaseDecision
from dihera.controller.decide.records import Facts
from dihera.model import DIJob
from dihera.objects import PodPhase
from dihera.shapes.dijob import DIJobStatus

__all__ = ["deadline_exceeded", "next_wakeup", "parse_time", "seconds_left", "ttl_left"]


def parse_time(text: str) -> dt.datetime:
    """An RFC 3339 timestamp (``Z`` or an offset) as an aware datetime."""
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def seconds_left(since: str | None, seconds: int | None, now: str) -> float | None:
    """Seconds from ``now`` until ``since + seconds`` (0 or less: due); None when either is unset."""
    if since is None or seconds is None:
        return None
    due = parse_time(since) + dt.timedelta(seconds=seconds)
    return (due - parse_time(now)).total_seconds()


def next_wakeup(*lefts: float | None) -> float | None:
    """The nearest of the times still ahead (seconds), or None when none is."""
    ahead = [left for left in lefts if left is not None and left > 0]
    return min(ahead) if ahead else None


def deadline_exceeded(f: Facts) -> PhaseDecision | None:
    """The phase policy: active longer than activeDeadlineSeconds → Failed (DeadlineExceeded)."""
    if f.deadline_passed is None:
        return None
    running = sum(1 for s in f.kept if s.pod_phase in (PodPhase.PENDING, PodPhase.RUNNING))
    return PhaseDecision(
        Phase.FAILED,
        f"the job was active longer than activeDeadlineSeconds {f.deadline_passed}; "
        f"{running} unfinished replica(s) are stopped as cleanPodPolicy says",
        EventReason.DEADLINE_EXCEEDED,
    )


def ttl_left(job: DIJob, status: DIJobStatus, now: str) -> float | None:
    """Seconds until a finished job is deleted (``ttlSecondsAfterFinished`` after ``completionTimestamp``;
    0 or less: due), or None when it has no TTL."""
    return seconds_left(status.get("completionTimestamp"), job.ttl_seconds_after_finished, now)
