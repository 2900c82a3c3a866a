"""An experiment's Workflow and its trials' DIJobs through the Kubernetes API (``dihera experiment``)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, cast

from kubernetes import client

from dihera.kube.objects import WORKFLOW_GROUP, WORKFLOW_PLURAL, WORKFLOW_VERSION
from dihera.schema import GROUP, PLURAL, VERSION
from dihera.sweeps.results import TrialResult
from dihera.sweeps.stopping import parse_history
from dihera.sweeps.sweep import (
    ANNOTATION_CONFIGURATION,
    ANNOTATION_PARAM_PREFIX,
    ANNOTATION_SEED,
    ANNOTATION_STOPPED,
    LABEL_EXPERIMENT,
    LABEL_TRIAL,
    parse_value,
)

__all__ = [
    "create_workflow",
    "plugin_installed",
    "read_workflow",
    "stop_trial",
    "stored_artifact",
    "trial_jobs",
    "trial_result",
    "trial_results",
]

_WORKFLOWS = (WORKFLOW_GROUP, WORKFLOW_VERSION, WORKFLOW_PLURAL)
FIELD_MANAGER = "dihera-experiment"


def create_workflow(api: client.ApiClient, manifest: Mapping[str, Any]) -> dict[str, Any]:
    """Create the experiment's Workflow (an existing one of the same name: ApiException 409)."""
    custom = client.CustomObjectsApi(api)
    namespace = manifest["metadata"]["namespace"]
    created = custom.create_namespaced_custom_object(*_WORKFLOWS[:2], namespace, WORKFLOW_PLURAL, dict(manifest))
    return cast(dict[str, Any], created)


def plugin_installed(api: client.ApiClient, namespace: str, configmap: str) -> bool:
    """Whether the executor plugin's ConfigMap is in ``namespace`` (Argo also loads one from its own namespace,
    which a user may not read: only a missing one here is worth a warning)."""
    try:
        client.CoreV1Api(api).read_namespaced_config_map(configmap, namespace)
    except client.ApiException as err:
        if err.status in (403, 404):
            return False
        raise
    return True


def read_workflow(api: client.ApiClient, namespace: str, name: str) -> dict[str, Any]:
    custom = client.CustomObjectsApi(api)
    return cast(dict[str, Any], custom.get_namespaced_custom_object(*_WORKFLOWS[:2], namespace, WORKFLOW_PLURAL, name))


def stored_artifact(api: client.ApiClient, namespace: str, job: str, artifact: str) -> tuple[str | None, str | None]:
    """The key of ``artifact`` in DIJob ``job``'s ``status.artifacts`` (the first replica's that stored it), and
    the job's phase; (None, None) when the DIJob is not there."""
    try:
        body = client.CustomObjectsApi(api).get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, job)
    except client.ApiException as err:
        if err.status == 404:
            return None, None
        raise
    status = cast(dict[str, Any], body).get("status") or {}
    keys = [a.get("key") for a in status.get("artifacts") or [] if a.get("name") == artifact and a.get("key")]
    return (keys[0] if keys else None), status.get("phase")


def _seconds(start: str | None, end: str | None) -> float | None:
    if not start or not end:
        return None
    return (_time(end) - _time(start)).total_seconds()


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def trial_result(job: Mapping[str, Any], metric: str) -> TrialResult:
    """A trial's DIJob as a :class:`TrialResult`: its values and seed from its annotations, the metric
    from ``status.profilings``."""
    meta, status = job.get("metadata") or {}, job.get("status") or {}
    annotations = meta.get("annotations") or {}
    values = {
        k.removeprefix(ANNOTATION_PARAM_PREFIX): parse_value(v)
        for k, v in annotations.items()
        if k.startswith(ANNOTATION_PARAM_PREFIX)
    }
    raw = (status.get("profilings") or {}).get(metric)
    try:
        value = None if raw is None or isinstance(raw, bool) else float(raw)
    except (TypeError, ValueError):
        value = None
    return TrialResult(
        index=int((meta.get("labels") or {}).get(LABEL_TRIAL, "0")),
        job=str(meta.get("name")),
        values=values,
        seed=int(annotations.get(ANNOTATION_SEED, "0")),
        phase="Stopped" if ANNOTATION_STOPPED in annotations else str(status.get("phase") or "Pending"),
        metric=value,
        seconds=_seconds(status.get("startTime"), status.get("completionTimestamp")),
        configuration=int(annotations[ANNOTATION_CONFIGURATION]) if ANNOTATION_CONFIGURATION in annotations else None,
        history=tuple(parse_history((status.get("profilings") or {}).get(f"{metric}History"))),
    )


def trial_jobs(
    api: client.ApiClient, namespace: str, experiment: str, owner_uid: str | None = None
) -> list[dict[str, Any]]:
    """Every trial DIJob of ``experiment`` (by its label); with ``owner_uid``, only those that Workflow owns (an
    earlier namesake's trials still being deleted are not this sweep's)."""
    custom = client.CustomObjectsApi(api)
    selector = f"{LABEL_EXPERIMENT}={experiment}"
    listed = cast(
        dict[str, Any], custom.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, label_selector=selector)
    )
    items = list(listed.get("items", []))
    if owner_uid is None:
        return items
    return [j for j in items if any(o.get("uid") == owner_uid for o in j["metadata"].get("ownerReferences") or [])]


def trial_results(
    api: client.ApiClient, namespace: str, experiment: str, metric: str, owner_uid: str | None = None
) -> list[TrialResult]:
    """Every trial DIJob of ``experiment`` (of the Workflow ``owner_uid``) as a result, in trial order."""
    jobs = trial_jobs(api, namespace, experiment, owner_uid)
    return sorted((trial_result(j, metric) for j in jobs), key=lambda r: r.index)


def stop_trial(api: client.ApiClient, job: Mapping[str, Any], reason: str) -> bool:
    """Suspend a trial's DIJob and record why (``diengine/stopped``), if it is still the version read
    (``resourceVersion`` precondition); False when it changed or is gone (the next round decides again)."""
    meta = job["metadata"]
    patch = {
        "metadata": {"resourceVersion": meta["resourceVersion"], "annotations": {ANNOTATION_STOPPED: reason}},
        "spec": {"suspend": True},
    }
    try:
        client.CustomObjectsApi(api).patch_namespaced_custom_object(
            GROUP, VERSION, meta["namespace"], PLURAL, meta["name"], patch, field_manager=FIELD_MANAGER
        )
    except client.ApiException as err:
        if err.status in (404, 409):
            return False
        raise
    return True
