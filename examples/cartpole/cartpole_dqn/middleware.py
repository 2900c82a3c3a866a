"""The example's own middlewares: the contract's progress lines.

Each is a no-op on a process without the role it reports for, like DI-engine's own middlewares.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ding.framework import task
from torch import nn

from .bigmodel import extra_digest, parameter_count
from .metrics import MetricsReporter
from .report import emit, write_progress

Middleware = Callable[[Any], Any]


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


def pause(role: Any, seconds: float) -> Middleware:
    """On a replica of `role`: sleep `seconds` each time the pipeline passes (a slowed collector or learner,
    for autoscaling's tests and benchmark; 0: nothing)."""
    if seconds <= 0 or not task.has_role(role):
        return task.void()

    def _pause(ctx: Any) -> None:
        time.sleep(seconds)

    return _pause


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


def evaluator_report(stop_value: float, metrics: MetricsReporter | None = None) -> Middleware:
    """On the evaluator: `dihera-eval` after each evaluation, `dihera-stop-value-reached` once; each return
    also to `metrics` (a sweep's trial: the di-server)."""
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
        final = value >= stop_value and ctx.train_iter > 0 and not reached
        if metrics is not None:  # the stop value's report is sent at once: the job ends with it
            metrics.evaluated(value, int(ctx.train_iter), final=final)
        if final:
            reached = True
            emit("stop-value-reached", **{"return": value, "iter": ctx.train_iter})

    return _report


def collector_model_report(model: nn.Module) -> Middleware:
    """On a collector whose model carries the extra weight (bigmodel): `dihera-model-received` once, the
    first time a model sent by the learner was loaded (train_iter > 0 and the weight is no longer its own
    initial one), with that weight's digest, to compare with the learner's `dihera-model` line."""
    if not task.has_role(task.role.COLLECTOR):
        return task.void()
    initial = extra_digest(model)
    done = False

    def _report(ctx: Any) -> None:
        nonlocal done
        if done or ctx.train_iter <= 0:
            return
        digest = extra_digest(model)
        if digest == initial:
            return
        done = True
        emit("model-received", role="collector", node=task.router.node_id, params=parameter_count(model), digest=digest)

    return _report
