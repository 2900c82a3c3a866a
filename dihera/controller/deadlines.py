"""Time-based decisions (pure): how long until ``activeDeadlineSeconds`` or ``ttlSecondsAfterFinished`` is due.

Times are RFC 3339 strings as the status holds them (``2026-01-02T03:04:05Z``); ``now`` is passed in,
never read here. The reconciler asks to be woken when the nearest one is due (:func:`next_wakeup`).
"""

from __future__ import annotations

import datetime as dt

__all__ = ["next_wakeup", "parse_time", "seconds_left"]


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
