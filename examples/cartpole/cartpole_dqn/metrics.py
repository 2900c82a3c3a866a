"""Reports to the di-server, which merges them into the DIJob's `status.profilings` (`POST
$DI_SERVER_URL/v2alpha1/job/<namespace>.<name>/profilings`, authorised by the pod's ServiceAccount token: it
may `create` `dijobs/profilings`, the chart's role `<fullname>-reporter`, and reports into its own DIJob only;
over HTTPS the di-server's certificate is checked against `DI_SERVER_CA`, the CA the controller gives the pods,
else the image's CAs):

- a sweep's trial reports its evaluator's returns (`MetricsReporter`); the sweep ranks its trials by them
  (docs/experiments.md);
- the learner reports each checkpoint it saved (`CheckpointReporter`): `status.profilings.checkpoint` is the
  last one (docs/checkpoints.md).

Best effort, off the training loop: a report that fails is logged (`dihera-metrics-failed`) and the next one
is tried; training never waits for one (but for the checkpoint saved on SIGTERM, sent before the process
exits, and the evaluator's report of the stop value, sent before DI-engine's finish ends the job, each for at
most the sender's timeout).
"""

from __future__ import annotations

import contextlib
import json
import queue
import ssl
import threading
import time
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .report import emit

TOKEN = Path("/var/run/secrets/kubernetes.io/serviceaccount/token")
Send = Callable[[Mapping[str, Any]], None]


def profilings_url(server_url: str, job_id: str) -> str:
    """The di-server's profilings route of the job `DI_JOB_ID` (`<namespace>/<name>`)."""
    return f"{server_url.rstrip('/')}/v2alpha1/job/{job_id.replace('/', '.', 1)}/profilings"


def http_sender(url: str, token_file: Path = TOKEN, timeout: float = 10.0, ca: str | None = None) -> Send:
    """POST a JSON body to `url` with the token read from `token_file` at each call (kubelet rotates it); an
    https `url`'s certificate checked against `ca` (PEM certificates, `DI_SERVER_CA`), else the system's CAs."""
    context = ssl.create_default_context(cadata=ca) if ca else None

    def send(body: Mapping[str, Any]) -> None:
        headers = {"Content-Type": "application/json"}
        if token_file.exists():
            headers["Authorization"] = f"Bearer {token_file.read_text().strip()}"
        request = urllib.request.Request(url, json.dumps(dict(body)).encode(), headers, method="POST")
        with urllib.request.urlopen(request, timeout=timeout, context=context) as answer:
            answer.read()

    return send


#: Evaluations kept in `evalReturnHistory` (a sweep's early stopping compares trials at matching iterations).
HISTORY = 100


class MetricsReporter:
    """Reports `{evalReturn, evalReturnBest, evalIteration, evalReturnHistory}` after each evaluation, from a
    thread of its own; only the newest report waiting is kept (a slow di-server gets the latest, not a
    backlog). The history is `[[iteration, return], ...]`, the last HISTORY evaluations."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self._best: float | None = None
        self._history: list[list[float]] = []
        self._pending: queue.Queue[dict[str, Any] | None] = queue.Queue(maxsize=1)
        # one send at a time, and none after the final one: an older report still in flight on the thread must
        # not land after the stop value's (measured in CI: the status kept 85 of iteration 565, not the final)
        self._sending = threading.Lock()
        self._final_sent = False
        self._thread = threading.Thread(target=self._run, name="dihera-metrics", daemon=True)
        self._thread.start()

    def evaluated(self, value: float, iteration: int, final: bool = False) -> None:
        """Queue the report of this evaluation; ``final`` (the stop value reached): send it now, from the caller's
        thread, tried twice, before DI-engine's finish ends the other replicas and the job (the job's end may take
        this pod down before the thread would have sent it)."""
        self._best = value if self._best is None else max(self._best, value)
        self._history = [*self._history, [iteration, value]][-HISTORY:]
        report = {
            "evalReturn": value,
            "evalReturnBest": self._best,
            "evalIteration": iteration,
            "evalReturnHistory": self._history,
        }
        with contextlib.suppress(queue.Empty):
            self._pending.get_nowait()  # drop a report not sent yet: this one is newer
        if final:
            for attempt in (1, 2):
                try:
                    with self._sending:
                        self._send(report)
                        self._final_sent = True
                    return
                except Exception as err:  # logged; training is over either way
                    emit("metrics-failed", error=type(err).__name__, attempt=attempt,
                         detail=str(err)[:200].replace(" ", "_"))  # fmt: skip
            return
        self._pending.put_nowait(report)

    def close(self, timeout: float = 15.0) -> None:
        """Send what waits, then stop (the evaluator calls it before it exits: the last return is kept)."""
        try:
            self._pending.put(None, timeout=timeout)
        except queue.Full:
            return
        self._thread.join(timeout)

    def _run(self) -> None:
        while (report := self._pending.get()) is not None:
            try:
                with self._sending:
                    if not self._final_sent:
                        self._send(report)
            except Exception as err:  # any failure: logged, training goes on
                emit("metrics-failed", error=type(err).__name__, detail=str(err)[:200].replace(" ", "_"))


class CheckpointReporter:
    """Reports `{checkpoint: {iteration, path, replica, time, onTerm}}` after each save, the newest only (a
    thread of its own, with `send`); a report that failed is sent again after `retry_seconds` (at most
    `attempts` times) unless a newer one replaced it meanwhile: a di-server slow to answer under load loses no
    checkpoint. The save made on SIGTERM (`final`) is sent at once with `send_final` (a timeout within the
    pod's grace period), once, before the process exits. A failure is logged once (a job whose pods may not
    report would log it at every save)."""

    def __init__(
        self,
        send: Send,
        replica: str,
        clock: Callable[[], float] = time.time,
        send_final: Send | None = None,
        attempts: int = 4,
        retry_seconds: float = 2.0,
    ) -> None:
        self._send, self._send_final, self._replica, self._clock = send, send_final or send, replica, clock
        self._attempts, self._retry = max(1, attempts), retry_seconds
        self._failed = False
        self._pending: queue.Queue[dict[str, Any]] = queue.Queue(maxsize=1)
        self._thread = threading.Thread(target=self._run, name="dihera-checkpoints", daemon=True)
        self._thread.start()

    def saved(self, iteration: int, path: str, final: bool = False) -> None:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self._clock()))
        report = {"checkpoint": {"iteration": iteration, "path": path, "replica": self._replica, "time": stamp,
                                 "onTerm": final}}  # fmt: skip
        if final:
            self._deliver(report, self._send_final)
            return
        with contextlib.suppress(queue.Empty):
            self._pending.get_nowait()  # drop a report not sent yet: this one is newer
        self._pending.put_nowait(report)

    def _deliver(self, report: dict[str, Any], send: Send) -> bool:
        try:
            send(report)
            return True
        except Exception as err:  # any failure: logged once, training goes on
            if not self._failed:
                self._failed = True
                emit("metrics-failed", error=type(err).__name__, detail=str(err)[:200].replace(" ", "_"))
            return False

    def _run(self) -> None:
        report, tries = self._pending.get(), 0
        while True:
            tries += 1
            if self._deliver(report, self._send) or tries >= self._attempts:
                report, tries = self._pending.get(), 0
                continue
            with contextlib.suppress(queue.Empty):  # a newer report replaces the one to send again
                report, tries = self._pending.get(timeout=self._retry), 0
