"""The learner's checkpoints in `DI_CHECKPOINT_DIR` (the DIJob's `spec.checkpoint` volume, docs/checkpoints.md):
resume from the newest one when the learner starts, save one every `every` iterations.

DI-engine 0.5.3's new pipeline saves (`CkptSaver`) but never loads; its counters live in the context and the
policy: `ctx.train_iter` (the only training iteration counter: OffPolicyLearner keeps none), `ctx.env_step`,
and the target network's update count, which decides when the target copy happens. All three are restored
with the weights, before the learner announces itself, so the peers' first model and iteration are the
restored ones. Contract lines: `dihera-resumed iter=<n> env_step=<m> file=<name>` when resuming,
`dihera-checkpoint iter=<n> seconds=<s>` after each save, which `on_saved` then reports (the DIJob's
`status.profilings.checkpoint`, through the di-server: metrics.CheckpointReporter).

SIGTERM (suspend, Kueue's preemption, eviction, a pod deleted: the kubelet's grace period follows) saves the
learner's state as of its last completed step, then the process exits 143. DI-engine traps no signal and its
loop checks no flag while the learner waits for data, so the handler saves at once when the learner is between
steps (the main thread is then in one of DI-engine's waits: nothing changes the policy) and, inside a step or a
save, defers to the step's end. It exits with `os._exit`: a `SystemExit` would make DI-engine broadcast
`finish` and end the whole job as if it had succeeded. Contract line: `dihera-terminated iter=<n> saved=<0|1>`.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from ding.framework import task

from .ckpt_files import checkpoint_name, iterations, leftovers, stale
from .report import emit

__all__ = ["Checkpointer", "checkpointer", "resumable_logger"]

Middleware = Callable[[Any], Any]


class Checkpointer:
    """On the learner only: `resume(ctx)` once, then `around(learner)` in place of the learner middleware."""

    def __init__(self, learn_mode: Any, directory: str, every: int, keep: int = 2) -> None:
        self._learn, self._every, self._keep = learn_mode, every, keep
        self._dir = Path(directory)
        self._dir.mkdir(parents=True, exist_ok=True)
        for path in leftovers(self._dir):
            path.unlink(missing_ok=True)
        self.last_saved: int | None = None
        self._busy = False  # inside a learner step or a save: the state is changing
        self._pending = False  # SIGTERM came while busy: save and exit at the step's end
        self._ctx: Callable[[], Any] = lambda: task.ctx
        #: Called after each save with its iteration, its file and whether SIGTERM made it (metrics.CheckpointReporter).
        self.on_saved: Callable[[int, str, bool], None] | None = None

    def on_sigterm(self, ctx: Callable[[], Any] | None = None) -> bool:
        """Save and exit 143 on SIGTERM (see the module docstring); `ctx` gives the current context (default:
        DI-engine's `task.ctx`). False where no handler can be installed (off the main thread)."""
        if ctx is not None:
            self._ctx = ctx
        if threading.current_thread() is not threading.main_thread():
            return False
        signal.signal(signal.SIGTERM, self._terminated)
        return True

    def _terminated(self, signum: int, frame: Any) -> None:
        if self._busy:
            self._pending = True
            return
        self._exit()

    def _exit(self) -> None:
        ctx = self._ctx()
        iteration = int(ctx.train_iter)
        fresh = iteration > 0 and iteration != self.last_saved
        if fresh:
            self._busy = True  # a second SIGTERM during this save changes nothing
            self.save(ctx, final=True)
        emit("terminated", iter=iteration, saved=int(fresh))
        sys.stdout.flush()
        if fresh:  # after the contract lines: what is left of the grace period may end the report
            self._report(iteration, self._dir / checkpoint_name(iteration), final=True)
        os._exit(128 + signal.SIGTERM)

    def resume(self, ctx: Any) -> int | None:
        """Load the newest readable checkpoint into the policy and `ctx`; its iteration, or None (none there)."""
        for iteration, path in iterations(self._dir):
            try:
                state = torch.load(path, map_location="cpu")
            # A torn file makes torch's unpickler raise whatever it meets (IndexError, UnpicklingError, EOFError,
            # RuntimeError...): any failure to read it means the one before it is tried.
            except Exception as err:
                emit("checkpoint-unreadable", file=path.name, error=type(err).__name__)
                continue
            self._learn.load_state_dict(state)
            self._learn.get_attribute("target_model").reset(target_update_count=int(state["last_iter"]))
            ctx.train_iter, ctx.env_step = int(state["last_iter"]), int(state["last_step"])
            emit("resumed", iter=ctx.train_iter, env_step=ctx.env_step, file=path.name)
            self.last_saved = iteration
            return iteration
        return None

    def save(self, ctx: Any, final: bool = False) -> None:
        """`iteration_<n>.pth.tar`, whole or not at all; then only the newest `keep` are kept; then reported
        (`on_saved`), but the save SIGTERM made (`final`), which `_exit` reports after its contract line."""
        started = time.monotonic()
        state = {**self._learn.state_dict(), "last_iter": int(ctx.train_iter), "last_step": int(ctx.env_step)}
        target = self._dir / checkpoint_name(int(ctx.train_iter))
        tmp = target.with_name(f"{target.name}.tmp.{os.getpid()}")
        with open(tmp, "wb") as out:
            torch.save(state, out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, target)
        self.last_saved = int(ctx.train_iter)
        for path in stale(self._dir, self._keep):
            path.unlink(missing_ok=True)
        emit("checkpoint", iter=self.last_saved, seconds=time.monotonic() - started)
        if not final:
            self._report(self.last_saved, target, final=False)

    def _report(self, iteration: int, path: Path, final: bool) -> None:
        if self.on_saved is None:
            return
        try:  # a report never costs the learner its training
            self.on_saved(iteration, str(path), final)
        except Exception as err:
            emit("metrics-failed", error=type(err).__name__, detail=str(err)[:200].replace(" ", "_"))

    def around(self, learner: Middleware) -> Middleware:
        """The learner middleware, then a save once `every` iterations passed since the last."""

        def _step(ctx: Any) -> None:
            self._busy = True
            try:
                learner(ctx)
                if ctx.train_iter > 0 and (self.last_saved is None or ctx.train_iter - self.last_saved >= self._every):
                    self.save(ctx)
            finally:
                self._busy = False
            if self._pending:
                self._exit()

        return _step


def resumable_logger(logger: Middleware) -> Middleware:
    """DI-engine's `online_logger`, made safe for a resumed `train_iter`.

    It pops `ctx.train_output` once `train_iter` moved `train_show_freq` past its last show, which it starts at
    -1: a learner resumed at iteration n meets that at once, in steps where it trained nothing yet (its
    buffer is empty after a restart; `train_output` an empty list), and DI-engine 0.5.3 dies with `IndexError:
    pop from empty list`. An empty list is handed on as None ("nothing trained"), which it skips.
    """

    def _log(ctx: Any) -> Any:
        if isinstance(ctx.train_output, list) and not ctx.train_output:
            ctx.train_output = None
        return logger(ctx)

    return _log


def checkpointer(learn_mode: Any, directory: str | None, every: int) -> Checkpointer | None:
    """A Checkpointer on the learner when the replica has a checkpoint directory (saving on SIGTERM), else None."""
    if not directory or not task.has_role(task.role.LEARNER):
        return None
    saver = Checkpointer(learn_mode, directory, every)
    saver.on_sigterm()
    return saver
