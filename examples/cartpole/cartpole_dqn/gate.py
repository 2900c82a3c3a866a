"""When a collector may send: the pure decisions behind the learner beacon and the collector send gate.

NNG drops a message for an event its receiver has not subscribed to yet, and nothing resends it. A
collector's batch sent before the learner has subscribed is lost, and the collectors then wait in
DI-engine's 60-s timeouts for a learner that never got their data. So the learner, once subscribed,
announces itself every second (a beacon carrying its incarnation and train_iter), and a collector holds
each batch until it has heard a recent beacon. No peer is counted and no node id is computed: it works
at any replica count, for replicas that join later, and across restarts of any replica, the learner's
included (a new learner is a new incarnation).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

#: The beacon's event name (DI-engine puts `task.<event>` on the wire, ding/framework/task.py).
BEACON_EVENT = "dihera_learner"
#: Seconds between two beacons.
BEACON_PERIOD = 1.0
#: Seconds between two looks of a waiting gate.
GATE_POLL = 0.05


@dataclass(frozen=True)
class Sighting:
    """The last beacon a collector heard: from which learner process, at which iteration, and when
    (its own monotonic clock, not the learner's)."""

    incarnation: str
    train_iter: int
    at: float


class Verdict(enum.Enum):
    WAIT = "wait"
    SEND = "send"  # a beacon at most `fresh` seconds old: the learner is subscribed
    FINISH = "finish"  # the job is ending: do not hold the last batch
    GIVE_UP = "give-up"  # held `limit` seconds without a fresh beacon: send anyway


def verdict(sighting: Sighting | None, now: float, waited: float, fresh: float, limit: float, finish: bool) -> Verdict:
    """What the gate does now, having held its batch `waited` seconds."""
    if sighting is not None and now - sighting.at <= fresh:
        return Verdict.SEND
    if finish:
        return Verdict.FINISH
    if waited >= limit:
        return Verdict.GIVE_UP
    return Verdict.WAIT


def is_new_learner(reported: str | None, sighting: Sighting) -> bool:
    """True the first time a learner is seen and whenever it is another process (a restarted learner)."""
    return sighting.incarnation != reported


def incarnation_id(hostname: str, pid: int, started: float) -> str:
    """One learner process: a pod restarted in place keeps its hostname and may reuse its pid, not its
    start time (milliseconds since the epoch)."""
    return f"{hostname}-{pid}-{round(started * 1000)}"
