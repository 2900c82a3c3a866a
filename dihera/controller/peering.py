"""Whether kopf's peering lets this replica act, for what runs outside kopf's watches (the reconcile
queue's passes, the pod watch's requests).

kopf pauses a replica when a live peer has a higher priority (or the same one), and resumes it when no
such peer is left; it then closes and reopens its own watches, but has no API that tells others. It
logs every pause and resume, always (docs/controller.md, "Two replicas"), so :class:`PeeringGate`
follows those records. Until kopf logs a pause the gate is open: a replica that kopf keeps paused from
its start gets no watch event and so reconciles nothing anyway, and if a kopf version words its
records differently the gate stays open, as it was before it existed.
"""

from __future__ import annotations

import logging
import threading

__all__ = ["PEERING_LOGGER", "PeeringGate"]

#: kopf's logger of its peering decisions.
PEERING_LOGGER = "kopf._core.engines.peering"
_PAUSING = ("Pausing operations in favour of", "Pausing all operators, including self")
_RESUMING = "Resuming operations after the pause"


class PeeringGate(logging.Filter):
    """A filter on kopf's peering logger (it lets every record through) that remembers the last pause
    or resume."""

    def __init__(self) -> None:
        super().__init__()
        self._paused = threading.Event()

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if message.startswith(_PAUSING):
            self._paused.set()
        elif message.startswith(_RESUMING):
            self._paused.clear()
        return True

    def active(self) -> bool:
        """False between kopf's pause and its resume."""
        return not self._paused.is_set()

    def install(self) -> None:
        logger = logging.getLogger(PEERING_LOGGER)
        logger.setLevel(min(logger.getEffectiveLevel(), logging.INFO))  # its pauses and resumes are INFO
        logger.addFilter(self)
