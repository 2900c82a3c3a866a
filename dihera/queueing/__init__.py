"""Queueing DIJobs with Kueue (pure): the settings, the Workload of a job, and what Kueue's answer means.

A DIJob labelled ``kueue.x-k8s.io/queue-name`` is one Kueue ``Workload`` (one podSet per task); the
controller creates no replica until Kueue admits it (docs/queueing.md). The API calls are in
:mod:`dihera.kube.workloads`; the controller holds a job Kueue has not admitted
(:mod:`dihera.controller.decide.hold`, from :func:`~dihera.queueing.workload.queue_state`).

- ``settings``: how dihera uses Kueue; ``workload``: a job's Workload and what its status means (admitted,
  or held and why); ``slices``: scaling a queued job under its quota; ``shrink``: the collectors given back
  so a higher-priority Workload fits without an eviction, and taken back after
"""

from __future__ import annotations

from dihera.queueing.settings import DEFAULT_PRIORITY_CLASSES, NONPREEMPTIBLE_CLASS, KueueSettings
from dihera.queueing.workload import (
    Placement,
    QueueState,
    WorkloadView,
    build_workload,
    finish_patch,
    placements,
    queue_name,
    queue_state,
    requeue_patch,
    slice_name,
    unqueueable,
    view_workload,
    with_placements,
    workload_name,
)

__all__ = [
    "DEFAULT_PRIORITY_CLASSES",
    "NONPREEMPTIBLE_CLASS",
    "KueueSettings",
    "Placement",
    "QueueState",
    "WorkloadView",
    "build_workload",
    "finish_patch",
    "placements",
    "queue_name",
    "queue_state",
    "requeue_patch",
    "slice_name",
    "unqueueable",
    "view_workload",
    "with_placements",
    "workload_name",
]
