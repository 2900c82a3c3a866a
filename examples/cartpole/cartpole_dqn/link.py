"""The learner beacon, the learner kick and the collector send gate (the decisions are in `gate`).

Each is user code on DI-engine's public pieces (`task.router`, `task.on`, `task.emit`) and two attributes
of its exchangers; nothing in DI-engine is changed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from ding.framework import task
from ding.framework.middleware import ContextExchanger, ModelExchanger
from ditk import logging

from .gate import BEACON_EVENT, BEACON_PERIOD, GATE_POLL, Sighting, Verdict, is_new_learner, verdict
from .report import emit

Middleware = Callable[[Any], Any]


class LearnerBeacon:
    """On the learner, once every `task.use(...)` has run (its subscriptions exist): a daemon thread that
    sends `(incarnation, train_iter)` on BEACON_EVENT every BEACON_PERIOD seconds until the task stops.

    It puts the event on the wire as `Task.emit(event, ..., only_remote=True)` would (`task.<event>` as
    the topic, the event name as the first argument, ding/framework/task.py), but from its own thread:
    `Task.emit` goes through the task's asyncio loop, which belongs to the main thread, while
    `Parallel.emit` only pickles and calls the NNG socket's send, which is thread-safe.
    """

    def __init__(self, incarnation: str, period: float = BEACON_PERIOD) -> None:
        self.incarnation = incarnation
        self._period = period
        self._thread = threading.Thread(target=self._run, name="dihera-learner-beacon", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _alive(self) -> bool:
        return bool(task.running and task.router.is_active)

    def _run(self) -> None:
        topic = task._wrap_event_name(BEACON_EVENT)  # the name Task.on subscribes on the other side
        while self._alive():
            try:
                task.router.emit(topic, BEACON_EVENT, self.incarnation, int(task.ctx.train_iter))
            except Exception as error:  # the socket closes under us while the task stops
                if not self._alive():
                    return
                logging.warning(f"dihera learner beacon: send failed, retrying: {error!r}")
            time.sleep(self._period)


def kick(context_exchanger: Any, model_exchanger: Any) -> None:
    """On the learner, once, at its start: send what its exchangers send after each iteration (its context,
    i.e. `train_iter`, and its model's state_dict).

    Collectors and the evaluator that were training with a previous learner wait up to 60 s for a
    context (`ContextExchanger.merge`) and then up to 60 s for a model (`ModelExchanger._update_model`)
    before each iteration; a learner that (re)starts sends nothing until it has trained once, which needs
    their data. This releases them at once. On a first start nobody waits and it is harmless.
    """
    if isinstance(context_exchanger, ContextExchanger):
        payload = context_exchanger.fetch(task.ctx)  # on the learner: {"train_iter": ...}
        for role in task.roles:  # as ContextExchanger.__call__ does after its yield
            task.emit(context_exchanger._event_name.format(role=role), payload, only_remote=True)
    if isinstance(model_exchanger, ModelExchanger):
        model_exchanger._send_model()


class CollectorGate:
    """On a collector, registered last (after StepCollector, before the backward pass in which
    ContextExchanger sends the batch): holds the batch until the learner's last beacon is at most
    `fresh` seconds old, the task finishes, or `limit` seconds passed (then it logs and sends anyway).

    Logs `dihera-learner-seen` the first time and whenever the learner is another process.
    """

    def __init__(self, fresh: float, limit: float) -> None:
        self._fresh, self._limit = fresh, limit
        self._latest: Sighting | None = None
        self._reported: str | None = None
        task.on(BEACON_EVENT, self._heard)

    def _heard(self, incarnation: str, train_iter: int) -> None:
        self._latest = Sighting(incarnation, train_iter, time.monotonic())

    def __call__(self, ctx: Any) -> None:
        started = time.monotonic()
        while True:
            now = time.monotonic()
            decision = verdict(self._latest, now, now - started, self._fresh, self._limit, task.finish)
            if decision is not Verdict.WAIT:
                break
            time.sleep(GATE_POLL)
        waited = time.monotonic() - started
        seen = self._latest
        if decision is Verdict.SEND and seen is not None and is_new_learner(self._reported, seen):
            self._reported = seen.incarnation
            emit(
                "learner-seen", role="collector", node=task.router.node_id, incarnation=seen.incarnation, waited=waited
            )
        elif decision is Verdict.GIVE_UP:
            emit("learner-wait-timeout", role="collector", node=task.router.node_id, waited=waited)


def collector_gate(fresh: float, limit: float) -> Middleware:
    """The gate on a collector of a distributed task; a no-op elsewhere."""
    if not task.router.is_active or not task.has_role(task.role.COLLECTOR):
        return task.void()
    return CollectorGate(fresh, limit)
