"""kopf handlers: every event about a DIJob, its Workflow or its pods re-syncs that one job.

Only watch-event handlers are used, so kopf itself writes nothing to the objects (no finalizers,
no state annotations): the controller's own writes are the objects it creates, the status, events and
cleanup. Workflows and pods are watched with a server-side label selector ``diengine/job``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

import kopf

from dihera.constants import LABEL_JOB
from dihera.controller.queue import ReconcileQueue
from dihera.schema import GROUP, PLURAL, VERSION

__all__ = ["build_registry", "configure_watching"]

log = logging.getLogger("dihera.controller")


def configure_watching(settings: Any) -> None:
    """Server-side label selectors: the controller never lists pods or Workflows that are not a job's."""
    settings.watching.label_selectors["argoproj.io", "workflows"] = LABEL_JOB
    settings.watching.label_selectors["v1", "pods"] = LABEL_JOB


def build_registry(
    queue: ReconcileQueue,
    login: Callable[..., Any],
    on_startup: Callable[..., Any] | None = None,
    on_cleanup: Callable[..., Any] | None = None,
) -> Any:
    """A fresh ``kopf.OperatorRegistry`` (no global registry) wired to ``queue``."""
    registry = kopf.OperatorRegistry()
    kopf.on.login(registry=registry)(login)
    if on_startup is not None:
        kopf.on.startup(registry=registry)(on_startup)
    if on_cleanup is not None:
        kopf.on.cleanup(registry=registry)(on_cleanup)

    @kopf.on.event(GROUP, VERSION, PLURAL, registry=registry)
    def dijob_event(type: str, name: str, namespace: str | None, **_: Any) -> None:
        namespace = namespace or "default"
        if type == "DELETED":
            queue.forget(namespace, name)
            log.info("DIJob deleted; its objects go with it (ownerReferences)", extra={"job": f"{namespace}/{name}"})
        queue.request(namespace, name)

    @kopf.on.event("argoproj.io", "v1alpha1", "workflows", labels={LABEL_JOB: kopf.PRESENT}, registry=registry)
    def workflow_event(labels: Mapping[str, str], namespace: str | None, **_: Any) -> None:
        queue.request(namespace or "default", labels[LABEL_JOB])

    @kopf.on.event("", "v1", "pods", labels={LABEL_JOB: kopf.PRESENT}, registry=registry)
    def pod_event(labels: Mapping[str, str], namespace: str | None, **_: Any) -> None:
        queue.request(namespace or "default", labels[LABEL_JOB])

    del dijob_event, workflow_event, pod_event
    return registry
