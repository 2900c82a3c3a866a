"""Report a DI-engine program's RL figures to dihera's di-server, with one line in any `ditask` main.

    from dihera_figures import dihera_figures
    ...
    task.use(dihera_figures())        # last, after the learner, the collector and the evaluator

The DIJob's `status.training` then shows them (`kubectl get dijob`: RETURN, ITER, STEPS/S; the Argo UI;
the di-server's learning curve; docs/training-figures.md). Each process reports for the roles it has
(`task.has_role`: a process without roles has them all, as DI-engine's serial pipeline):

- learner: `iteration` (ctx.train_iter), `iterationsPerSecond`, `samplesPerSecond` (iterations times the
  batch size, `len(ctx.train_data)`), `dataWaitFraction` (the share of wall time spent in
  `ContextExchanger.merge`, where DI-engine's learner sleeps until collectors' trajectories arrive; 0 in a
  single process, which never waits for data) and `loss` (the last `total_loss`, for NaN detection);
- collector: `envSteps` (ctx.env_step, its own), `envStepsPerSecond`, `modelIteration` (ctx.train_iter: the
  learner iteration its model comes from, set by ContextExchanger before it steps);
- evaluator: `return` (ctx.eval_value) and `iteration` after each evaluation.

One file, the standard library and DI-engine only: the project's DI-engine image has it on its PYTHONPATH
(ci/images/di-engine/Dockerfile); copy it into any other image. It reads `DI_SERVER_URL` and `DI_JOB_ID`
(the controller gives them to every replica; `DI_SERVER_CA`: the CA of an HTTPS di-server) and the pod's
ServiceAccount token; without them it is a no-op and the program runs as before. Reports go from a thread
of its own, the newest per role every `interval` seconds (an evaluation at once); the training loop only
stores numbers. A failed report is logged once on stdout (`dihera-figures-failed error=<type> detail=<why>`,
e.g. an HTTP 403 naming the missing right) and the next one is tried: training never waits or fails for a report.
"""

from __future__ import annotations

import json
import logging
import math
import os
import ssl
import threading
import time
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["DataWait", "Figures", "Sender", "dihera_figures", "figures_middleware", "training_url"]

log = logging.getLogger("dihera_figures")

TOKEN = Path("/var/run/secrets/kubernetes.io/serviceaccount/token")
#: Seconds between two reports of one role.
INTERVAL = 2.0
Send = Callable[[Mapping[str, Any]], None]


def training_url(server_url: str, job_id: str) -> str:
    """The di-server's report route of the job `DI_JOB_ID` (`<namespace>/<name>`)."""
    return f"{server_url.rstrip('/')}/v2alpha1/job/{job_id.replace('/', '.', 1)}/training"


def http_send(url: str, ca: str | None = None, token_file: Path = TOKEN, timeout: float = 5.0) -> Send:
    """POST a report as JSON (NaN kept as NaN: the di-server names it) with the pod's token, read at each call."""
    context = ssl.create_default_context(cadata=ca) if ca else None

    def send(body: Mapping[str, Any]) -> None:
        headers = {"Content-Type": "application/json"}
        if token_file.exists():
            headers["Authorization"] = f"Bearer {token_file.read_text().strip()}"
        request = urllib.request.Request(url, json.dumps(dict(body)).encode(), headers, method="POST")
        with urllib.request.urlopen(request, timeout=timeout, context=context) as answer:
            answer.read()

    return send


class Sender:
    """The newest report of each role, sent from a daemon thread; `offer` never blocks on the network."""

    def __init__(self, send: Send) -> None:
        self._send, self._failed = send, False
        self._waiting: dict[str, dict[str, Any]] = {}
        self._lock = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="dihera-figures", daemon=True)
        self._thread.start()

    def offer(self, report: dict[str, Any]) -> None:
        with self._lock:
            self._waiting[report["role"]] = report  # a newer report of the role replaces one not sent yet
            self._lock.notify()

    def flush(self, timeout: float = 5.0) -> None:
        """Wait (at most `timeout`) until every waiting report was tried (the end of a run)."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while self._waiting and time.monotonic() < deadline:
                self._lock.wait(0.05)

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._waiting:
                    self._lock.wait()
                reports = list(self._waiting.values())
            for report in reports:
                try:
                    self._send(report)
                except Exception as err:  # any failure: logged once, training goes on
                    if not self._failed:
                        self._failed = True
                        detail = str(err)[:200].replace(" ", "_")  # one line on stdout, read by `make demo`
                        print(f"dihera-figures-failed error={type(err).__name__} detail={detail}", flush=True)
            with self._lock:
                for report in reports:
                    if self._waiting.get(report["role"]) is report:
                        del self._waiting[report["role"]]
                self._lock.notify_all()


class DataWait:
    """Seconds the learner spent waiting for data: `wrap` times a blocking call (ContextExchanger.merge)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds, self._clock = 0.0, clock

    def wrap(self, call: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = self._clock()
            try:
                return call(*args, **kwargs)
            finally:
                self.seconds += self._clock() - start

        timed.__wrapped__ = call  # type: ignore[attr-defined]
        return timed


def _number(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _loss(train_output: Any) -> float | None:
    """The last `total_loss` of the step (OffPolicyLearner leaves a list of the iterations' outputs)."""
    outputs = train_output if isinstance(train_output, list) else [train_output]
    for output in reversed(outputs):
        if isinstance(output, Mapping) and "total_loss" in output:
            return _number(output["total_loss"])
    return None


class Figures:
    """A process's figures from its context, per role, over the window since that role's last report."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, wait: DataWait | None = None) -> None:
        self._clock, self._wait = clock, wait
        self._last: dict[str, tuple[float, float, float, float]] = {}  # role -> (time, count, samples, wait)
        self._samples = 0.0
        self._iteration = 0
        self._evaluated = -1

    def _rates(self, role: str, count: float, now: float) -> tuple[float | None, float | None, float | None]:
        """Per second, since the role's last report: `count`, the samples, the data wait (None: first report)."""
        waited = self._wait.seconds if self._wait is not None else 0.0
        before = self._last.get(role)
        self._last[role] = (now, count, self._samples, waited)
        if before is None or now <= before[0]:
            return None, None, None
        span = now - before[0]
        return (count - before[1]) / span, (self._samples - before[2]) / span, min(1.0, (waited - before[3]) / span)

    def count_samples(self, ctx: Any) -> None:
        """Samples consumed since the last step: the iterations done times the batch size."""
        iteration = int(getattr(ctx, "train_iter", 0) or 0)
        batch = getattr(ctx, "train_data", None)
        if iteration > self._iteration and isinstance(batch, list):
            self._samples += (iteration - self._iteration) * len(batch)
        self._iteration = max(self._iteration, iteration)

    def learner(self, ctx: Any) -> dict[str, Any]:
        iteration = int(getattr(ctx, "train_iter", 0) or 0)
        per_second, samples, wait = self._rates("learner", iteration, self._clock())
        report: dict[str, Any] = {"role": "learner", "iteration": iteration}
        if per_second is not None:
            report.update(iterationsPerSecond=per_second, samplesPerSecond=samples, dataWaitFraction=wait)
        if (loss := _loss(getattr(ctx, "train_output", None))) is not None:
            report["loss"] = loss
        return report

    def collector(self, ctx: Any) -> dict[str, Any]:
        steps = int(getattr(ctx, "env_step", 0) or 0)
        per_second, _, _ = self._rates("collector", steps, self._clock())
        report: dict[str, Any] = {"role": "collector", "envSteps": steps,
                                  "modelIteration": int(getattr(ctx, "train_iter", 0) or 0)}  # fmt: skip
        if per_second is not None:
            report["envStepsPerSecond"] = max(0.0, per_second)
        return report

    def evaluator(self, ctx: Any) -> dict[str, Any] | None:
        """The evaluation this step made, once (DI-engine sets `last_eval_iter` when it evaluates)."""
        evaluated = int(getattr(ctx, "last_eval_iter", -1))
        value = _number(getattr(ctx, "eval_value", None))
        if evaluated == self._evaluated or evaluated < 0 or value is None or value == -math.inf:
            return None
        self._evaluated = evaluated
        return {"role": "evaluator", "iteration": evaluated, "return": value}


def figures_middleware(
    roles: tuple[str, ...],
    sender: Sender,
    clock: Callable[[], float] = time.monotonic,
    interval: float = INTERVAL,
    wait: DataWait | None = None,
) -> Callable[[Any], None]:
    """The middleware for a process with `roles` (DI-engine-free: tests drive it with any context)."""
    figures, due = Figures(clock, wait), dict.fromkeys(roles, float("-inf"))

    def report(ctx: Any) -> None:
        try:
            now = clock()
            if "learner" in roles:
                figures.count_samples(ctx)
            for role in ("learner", "collector"):
                if role in roles and now >= due[role]:
                    due[role] = now + interval
                    sender.offer(figures.learner(ctx) if role == "learner" else figures.collector(ctx))
            if "evaluator" in roles and (evaluation := figures.evaluator(ctx)) is not None:
                sender.offer(evaluation)
        except Exception:  # a figure that cannot be read never stops training
            log.debug("dihera-figures: a figure could not be read", exc_info=True)

    return report


def _time_the_data_wait(wait: DataWait) -> None:
    """Time the learner's wait for trajectories: ContextExchanger.merge sleeps until they arrive."""
    from ding.framework.middleware import ContextExchanger

    merge = ContextExchanger.merge
    if not hasattr(merge, "__wrapped__"):
        ContextExchanger.merge = wait.wrap(merge)  # type: ignore[method-assign]


def dihera_figures(environ: Mapping[str, str] | None = None, interval: float = INTERVAL) -> Callable[[Any], Any]:
    """The middleware for this process's roles; DI-engine's no-op middleware without `DI_SERVER_URL` and
    `DI_JOB_ID` (a program run outside a DIJob, or a DIJob without a di-server)."""
    from ding.framework import task

    environ = os.environ if environ is None else environ
    url, job = environ.get("DI_SERVER_URL", "").strip(), environ.get("DI_JOB_ID", "").strip()
    if not url or not job:
        return task.void()
    names = {"learner": task.role.LEARNER, "collector": task.role.COLLECTOR, "evaluator": task.role.EVALUATOR}
    roles = tuple(name for name, role in names.items() if task.has_role(role))
    wait = DataWait()
    if "learner" in roles and task.router.is_active:
        _time_the_data_wait(wait)
    sender = Sender(http_send(training_url(url, job), ca=environ.get("DI_SERVER_CA", "").strip() or None))
    task.once("finish", lambda _: sender.flush())
    return figures_middleware(roles, sender, interval=interval, wait=wait)
