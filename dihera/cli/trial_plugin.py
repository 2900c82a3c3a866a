"""``dihera experiment trial-plugin``: the sweep's executor plugin, a sidecar in Argo's agent pod.

Serves Argo's executor-plugin call ``POST /api/v1/template.execute`` on 127.0.0.1 (the agent calls it on
``localhost`` in the pod) for the trial nodes of one Workflow, and answers what
:class:`dihera.sweeps.plugin.Trials` decides. Its one watch (:class:`dihera.kube.watch.informer.Informer`)
follows the sweep's DIJobs (label ``diengine/experiment``), started with the first call, which names the
Workflow; every request carries the agent's token (``/var/run/argo/token``), anything else is refused.
"""

from __future__ import annotations

import argparse
import functools
import hmac
import json
import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from dihera.kube.experiments import trial_result
from dihera.shapes.dijob import DIJobObject, as_dijob
from dihera.sweeps.plugin import PluginRequestError, SummaryRequest, TrialRefused, TrialRequest, Trials
from dihera.sweeps.results import Goal, best_values, csv_table, markdown_table

if TYPE_CHECKING:
    from kubernetes import client

    from dihera.kube.jobs import JobStore
    from dihera.kube.watch.informer import Informer

__all__ = ["TOKEN_FILE", "create_app", "run", "summary_reply"]

log = logging.getLogger("dihera.trial_plugin")
#: Where Argo's agent pod gives each plugin sidecar the token the agent sends (Argo's executor-plugin contract).
TOKEN_FILE = Path("/var/run/argo/token")  # the default of `--token-file`


class _Watch:
    """The sweep's DIJobs, watched from the first request on (the request names namespace and sweep)."""

    def __init__(self, api: client.ApiClient, trials: Trials) -> None:
        self._api, self._trials = api, trials
        self._lock = threading.Lock()
        self._informer: Informer | None = None

    def start(self, namespace: str, experiment: str) -> None:
        from dihera.kube.watch.informer import Informer
        from dihera.kube.watch.kinds import KINDS, Kind, list_call
        from dihera.sweeps.sweep import LABEL_EXPERIMENT

        with self._lock:
            if self._informer is not None:
                return
            dijob = KINDS["DIJob"]
            kind = Kind(dijob.name, dijob.group, dijob.version, dijob.plural, f"{LABEL_EXPERIMENT}={experiment}")
            self._informer = Informer(
                list_call(self._api, kind, namespace),
                f"DIJobs of {namespace}/{experiment}",
                on_listed=self._listed,
                on_event=self._event,
                on_synced=self._trials.synced,
            )
            self._informer.start()

    def _listed(self, objects: list[dict[str, object]], _version: str) -> None:
        for obj in objects:
            self._trials.seen(obj)

    def _event(self, kind: str, obj: dict[str, object]) -> None:
        if kind == "DELETED":
            self._trials.gone(obj)
        else:
            self._trials.seen(obj)


def summary_reply(jobs: Sequence[DIJobObject] | None, request: SummaryRequest) -> dict[str, object]:
    """The summary node's reply: the results table (Markdown, CSV) and the best values, from the trials' DIJobs
    as the watch saw them (what ``dihera experiment summarize`` writes, without its files)."""
    if jobs is None:
        return {"node": {"phase": "Pending", "message": "waiting for the trials' watch"}, "requeue": "1s"}
    results = sorted((trial_result(j, request.metric) for j in jobs), key=lambda r: r.index)
    if not results:
        message = f"no DIJob of experiment {request.namespace}/{request.experiment} (label diengine/experiment)"
        return {"node": {"phase": "Failed", "message": message}}
    goal = Goal(request.goal)
    outputs = {
        "best": json.dumps(best_values(results, request.metric, goal), sort_keys=True),
        "results": markdown_table(results, request.metric, goal),
        "results-csv": csv_table(results, request.metric),
    }
    parameters = [{"name": k, "value": v} for k, v in outputs.items()]
    message = f"{len(results)} trials summarized"
    return {"node": {"phase": "Succeeded", "message": message, "outputs": {"parameters": parameters}}}


def create_app(trials: Trials, start_watch: Callable[[str, str], None], token: str) -> FastAPI:
    """The FastAPI app: ``template.execute`` for trial and summary templates, ``{}`` for any other plugin's.
    ``start_watch(namespace, experiment)`` starts the watch of the sweep's DIJobs (once)."""
    app = FastAPI(title="dihera trial plugin", docs_url=None, redoc_url=None, openapi_url=None)
    expected = f"Bearer {token}"

    @app.post("/api/v1/template.execute")
    async def execute(request: Request) -> JSONResponse:
        if not hmac.compare_digest(request.headers.get("authorization", ""), expected):
            return JSONResponse({"error": "the agent's token is required"}, status_code=403)
        body = await request.json()
        try:
            trial, summary = TrialRequest.parse(body), SummaryRequest.parse(body)
        except PluginRequestError as err:
            return JSONResponse({"node": {"phase": "Failed", "message": str(err)}})
        if summary is not None:
            start_watch(summary.namespace, summary.experiment)
            return JSONResponse(summary_reply(trials.owned(summary.workflow_uid), summary))
        if trial is None:
            return JSONResponse({})
        start_watch(trial.namespace, trial.experiment)
        return JSONResponse(await run_in_threadpool(trials.execute, trial))  # it may create a DIJob: not in the loop

    return app


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from dihera.kube import api_client
    from dihera.kube.jobs import JobStore

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    api = api_client(args.kubeconfig, None)
    jobs = JobStore(api)
    trials = Trials(functools.partial(_create, jobs))
    watch = _Watch(api, trials)
    token = Path(args.token_file).read_text().strip()
    app = create_app(trials, watch.start, token)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False)
    return 0


def _create(jobs: JobStore, manifest: DIJobObject) -> None:
    from kubernetes.client.exceptions import ApiException

    try:
        jobs.create(manifest)
    except ApiException as err:
        if err.status == 409:  # created before this plugin restarted: the watch reports it
            return
        if err.status is not None and 400 <= err.status < 500 and err.status != 429:
            name = as_dijob(manifest)["metadata"]["name"]
            raise TrialRefused(f"the API server refused DIJob {name}: {err.status} {err.body}") from err
        raise
    log.info("created DIJob %s", as_dijob(manifest)["metadata"]["name"])
