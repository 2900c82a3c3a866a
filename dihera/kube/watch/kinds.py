"""The kinds the watch layer lists and watches: where each lives in the API, the label selector it is
watched with (the job an object belongs to is the store's index: :func:`dihera.kube.watch.store.job_of`).

Every kind but the DIJob is watched with a server-side label selector, so the watches bring only the
jobs' own objects: pods and Workflows labelled ``diengine/job``; membership ConfigMaps, headless Services
and Kueue Workloads labelled ``app.kubernetes.io/managed-by=dihera`` too (a user's ConfigMap with a job
label, e.g. a DI-engine config shipped beside a DIJob, is not the controller's).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from kubernetes import client

from dihera.constants import KUEUE_GROUP, KUEUE_VERSION, LABEL_JOB, MANAGED_BY
from dihera.schema import GROUP, PLURAL, VERSION

__all__ = ["KINDS", "JobKey", "Kind", "list_call", "managed_job_selector"]

JobKey = tuple[str, str]  # (namespace, job name)


def managed_job_selector() -> str:
    """The label selector of the project's objects of a job (membership ConfigMaps, Kueue Workloads)."""
    return ",".join([*(f"{k}={v}" for k, v in MANAGED_BY.items()), LABEL_JOB])


@dataclass(frozen=True)
class Kind:
    """One watched kind: ``group``/``version``/``plural`` of a custom resource (``group`` empty: core/v1)."""

    name: str
    group: str
    version: str
    plural: str
    selector: str = ""


#: kind → how it is watched.
KINDS: Mapping[str, Kind] = {
    "DIJob": Kind("DIJob", GROUP, VERSION, PLURAL),
    "Pod": Kind("Pod", "", "v1", "pods", LABEL_JOB),
    "Workflow": Kind("Workflow", "argoproj.io", "v1alpha1", "workflows", LABEL_JOB),
    "ConfigMap": Kind("ConfigMap", "", "v1", "configmaps", managed_job_selector()),
    "Service": Kind("Service", "", "v1", "services", managed_job_selector()),
    "Workload": Kind("Workload", KUEUE_GROUP, KUEUE_VERSION, "workloads", managed_job_selector()),
    "Namespace": Kind("Namespace", "", "v1", "namespaces"),
}

_CORE_LISTS = {
    # plural → (namespaced list method, list method of every namespace) of CoreV1Api
    "pods": ("list_namespaced_pod", "list_pod_for_all_namespaces"),
    "configmaps": ("list_namespaced_config_map", "list_config_map_for_all_namespaces"),
    "services": ("list_namespaced_service", "list_service_for_all_namespaces"),
}


def list_call(api: client.ApiClient, kind: Kind, namespace: str | None) -> Callable[..., object]:
    """The generated client's list method of ``kind`` bound to its scope (``namespace`` None: every
    namespace) and selector, as :class:`dihera.kube.watch.informer.Informer` calls it (``limit``,
    ``_continue`` to list; ``watch=True`` to watch)."""
    selector = kind.selector
    if kind.name == "Namespace":
        return functools.partial(client.CoreV1Api(api).list_namespace, label_selector=selector)
    if not kind.group:
        namespaced, everywhere = _CORE_LISTS[kind.plural]
        core = client.CoreV1Api(api)
        if namespace is None:
            return functools.partial(getattr(core, everywhere), label_selector=selector)
        return functools.partial(getattr(core, namespaced), namespace, label_selector=selector)
    custom = client.CustomObjectsApi(api)
    if namespace is None:
        return functools.partial(
            custom.list_cluster_custom_object, kind.group, kind.version, kind.plural, label_selector=selector
        )
    return functools.partial(
        custom.list_namespaced_custom_object, kind.group, kind.version, namespace, kind.plural, label_selector=selector
    )
