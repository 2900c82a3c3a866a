"""The di-server's backend in memory: jobs rendered and scaled with the real planning code, two tokens.

Used by the di-server's unit tests (the ``backend`` fixture of tests/unit/conftest.py) and by
bench/bench_server_app.py.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import jsonpatch  # type: ignore[import-untyped]

from dihera import load_job
from dihera.constants import (
    LABEL_EXPERIMENT,
    LABEL_TRIAL_POD,
    PROFILINGS_SUBRESOURCE,
    TOKEN_EXTRA_POD_NAME,
    TOKEN_EXTRA_POD_UID,
)
from dihera.kube.auth import Identity
from dihera.kube.snapshot import JobSnapshot
from dihera.membership import Membership
from dihera.profilings import bounded_merge
from dihera.render import render
from dihera.scaling import ScaleError, ScaleRequest, plan_scale, workflow_patch
from dihera.scaling.executor import ScaleResult
from dihera.server.idempotency import IdempotencyStore

__all__ = ["ADMIN", "POD", "POD_NAME", "POD_UID", "REPORTER", "VIEWER", "FakeBackend"]


ADMIN, VIEWER = "admin-token", "viewer-token"
#: A job pod's token with only the report right (``create`` on ``dijobs/profilings``); its username is itself.
REPORTER = "reporter"
#: The same right, with a token bound to the pod ``POD_NAME`` (uid ``POD_UID``), as a pod's own token is.
POD, POD_NAME, POD_UID = "pod-token", "dqn-learner-0-1234", "uid-1234"


class FakeBackend:
    """Jobs in memory; ``admin-token`` may do anything, ``viewer-token`` may only get, ``reporter`` may only
    report (create ``dijobs/profilings``)."""

    def __init__(self) -> None:
        self.jobs: dict[tuple[str, str], dict[str, Any]] = {}
        self.scale_calls = 0
        self.profilings: dict[tuple[str, str], Mapping[str, Any]] = {}
        self.training_writes: list[tuple[str, str, dict[str, Any]]] = []
        #: What each SubjectAccessReview asked: (username, verb, namespace, name, subresource).
        self.reviews: list[tuple[str, str, str, str, str]] = []
        self.lock = threading.Lock()
        self.keys = IdempotencyStore(600)

    def add(self, doc: dict[str, Any], namespace: str = "team-a") -> None:
        doc["metadata"]["namespace"] = namespace
        job = load_job(doc)
        rendered = render(job)
        body = job.to_manifest()
        body["status"] = {"phase": "Running"}
        self.jobs[(namespace, job.name)] = {
            "body": body,
            "configmap": rendered.configmap,
            "workflow": rendered.workflow,
            "job": job,
        }

    def ready(self) -> bool:
        return True

    def job(self, namespace: str, name: str) -> JobSnapshot | None:
        entry = self.jobs.get((namespace, name))
        return JobSnapshot(entry["body"], entry["configmap"], tuple(entry.get("pods", ()))) if entry else None

    def trial_job(self, namespace: str, pod: str) -> str | None:
        labelled = [
            name
            for (ns, name), entry in sorted(self.jobs.items())
            if ns == namespace and entry["body"]["metadata"].get("labels", {}).get(LABEL_TRIAL_POD) == pod
        ]
        return labelled[0] if labelled else None

    def experiment_jobs(self, namespace: str, experiment: str) -> list[dict[str, Any]]:
        return [
            entry["body"]
            for (ns, _), entry in sorted(self.jobs.items())
            if ns == namespace and entry["body"]["metadata"].get("labels", {}).get(LABEL_EXPERIMENT) == experiment
        ]

    def scale(self, namespace: str, name: str, request: ScaleRequest) -> ScaleResult:
        with self.lock:
            self.scale_calls += 1
            entry = self.jobs.get((namespace, name))
            if entry is None:
                raise ScaleError(f"DIJob {namespace}/{name} not found", "not-found")
            current = Membership.from_json(entry["configmap"]["data"]["membership.json"])
            plan = plan_scale(entry["job"], current, entry["workflow"], request)
            rendered = render(plan.job, membership=plan.membership)
            entry.update(job=plan.job, configmap=rendered.configmap, body={**plan.job.to_manifest(), "status": {}})
            entry["workflow"] = jsonpatch.apply_patch(
                entry["workflow"], workflow_patch(plan.membership, entry["workflow"])
            )
            return ScaleResult(
                namespace, name, plan.membership, plan.replicas, plan.added, plan.removed, (), plan.changed
            )

    def record_profilings(self, namespace: str, name: str, data: Mapping[str, Any]) -> bool:
        """As the real backend: the merged ``status.profilings`` bounded (dihera.profilings.bounded_merge)."""
        self.profilings[(namespace, name)] = data
        entry = self.jobs.get((namespace, name))
        if entry is None:
            return False
        status = entry["body"].setdefault("status", {})
        status["profilings"] = bounded_merge(status.get("profilings"), data)
        return True

    def write_training(self, namespace: str, name: str, uid: str, training: Mapping[str, Any]) -> bool:
        """As the real backend: ``status.training`` replaced whole, on the DIJob with that uid only."""
        self.training_writes.append((namespace, name, dict(training)))
        entry = self.jobs.get((namespace, name))
        if entry is None or entry["body"]["metadata"].get("uid", "") != uid:
            return False
        entry["body"].setdefault("status", {})["training"] = dict(training)
        return True

    def authenticate(self, token: str) -> Identity | None:
        pod = Identity(REPORTER, extra={TOKEN_EXTRA_POD_NAME: (POD_NAME,), TOKEN_EXTRA_POD_UID: (POD_UID,)})
        return {ADMIN: Identity("admin"), VIEWER: Identity("viewer"), REPORTER: Identity(REPORTER), POD: pod}.get(token)

    def allowed(self, identity: Identity, verb: str, namespace: str, name: str, subresource: str = "") -> bool:
        self.reviews.append((identity.username, verb, namespace, name, subresource))
        if identity.username == REPORTER:
            return (verb, subresource) == ("create", PROFILINGS_SUBRESOURCE)
        return identity.username == "admin" or verb == "get"
