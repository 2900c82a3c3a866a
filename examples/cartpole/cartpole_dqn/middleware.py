"""The example's own middlewares: a one-shot start-up barrier and the contract's progress lines.

Each is a no-op on a process without the role it reports for, like DI-engine's own middlewares.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ding.framework import task
from ding.framework.middleware.barrier import Barrier

from .report import emit, write_progress

Middleware = Callable[[Any], Any]


class StartupBarrier:
    """DI-engine's `Barrier`, entered once, on the first iteration, then never again.

    NNG drops a message for an event its receiver has not subscribed to yet, and nothing resends it:
    collectors that send before the learner has subscribed lose their first data. Waiting once until
    every replica has attached and reached its first iteration closes that race. In a mesh rank r dials
    the r lower ranks and is dialled by the `world - 1 - r` higher ones, which is what `Barrier` takes.
    A replica that joins a job already past its barrier (scale-up, restart in place) waits `timeout`
    seconds and then trains on (`dihera-barrier-timeout`); 0 skips the barrier.
    """

    def __init__(self, role: str, rank: int, world: int, timeout: float) -> None:
        self._role, self._rank, self._world, self._timeout = role, rank, world, timeout
        self._pending = world > 1 and timeout > 0
        self._barrier = Barrier(world - 1 - rank, timeout=int(timeout)) if self._pending else None

    def __call__(self, ctx: Any) -> None:
        if not self._pending or self._barrier is None:
            return
        self._pending = False
        started = time.monotonic()
        # Barrier.__call__ waits for the peers, yields, and waits again after the iteration; run only
        # the first wait: advance the generator to its yield, then close it.
        entry = self._barrier(ctx)
        try:
            next(entry)
        except TimeoutError:
            emit("barrier-timeout", role=self._role, node=task.router.node_id, waited=time.monotonic() - started)
            return
        finally:
            entry.close()
        emit("connected", role=self._role, node=task.router.node_id, peers=self._world - 1)


def learner_progress(every: int, budget: int) -> Middleware:
    """On the learner: `dihera-progress` at the first iteration and every `every` iterations."""
    if not task.has_role(task.role.LEARNER):
        return task.void()
    next_mark = 1

    def _report(ctx: Any) -> None:
        nonlocal next_mark
        if ctx.train_iter < next_mark:
            return
        emit("progress", role="learner", iter=ctx.train_iter, env_step=ctx.env_step)
        write_progress(ctx.train_iter, budget)
        next_mark = (ctx.train_iter // every + 1) * every

    return _report


def collector_report(every: int) -> Middleware:
    """On a collector: `dihera-collect` at its first iteration, its first model from the learner, then
    whenever the model it collects with is `every` or more learner iterations newer than the last logged.

    ContextExchanger sets `ctx.train_iter` from the learner's broadcast and ModelExchanger loads the
    learner's weights sent with it, both before the collector steps, so `train_iter` names the model.
    """
    if not task.has_role(task.role.COLLECTOR):
        return task.void()
    logged = -1

    def _report(ctx: Any) -> None:
        nonlocal logged
        first_model = logged <= 0 < ctx.train_iter
        if logged >= 0 and not first_model and ctx.train_iter < logged + every:
            return
        logged = ctx.train_iter
        emit("collect", role="collector", node=task.router.node_id, model_iter=ctx.train_iter, env_step=ctx.env_step)

    return _report


def evaluator_report(stop_value: float) -> Middleware:
    """On the evaluator: `dihera-eval` after each evaluation, `dihera-stop-value-reached` once."""
    if not task.has_role(task.role.EVALUATOR):
        return task.void()
    seen = -1
    reached = False

    def _report(ctx: Any) -> None:
        nonlocal seen, reached
        if ctx.last_eval_iter == seen or ctx.last_eval_iter < 0:
            return
        seen = ctx.last_eval_iter
        value = float(ctx.eval_value)
        emit("eval", **{"return": value, "iter": ctx.train_iter})
        # The same condition as DI-engine's interaction_evaluator, which then sets task.finish.
        if value >= stop_value and ctx.train_iter > 0 and not reached:
            reached = True
            emit("stop-value-reached", **{"return": value, "iter": ctx.train_iter})

    return _report
