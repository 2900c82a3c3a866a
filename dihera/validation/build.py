"""The typed :class:`~dihera.model.DIJob` from a valid DIJob with the schema's defaults applied (pure).

Nothing is checked here: :func:`~dihera.validation.load_job` builds only what ``validate`` found valid, so every
field this reads is there and of its type.
"""

from __future__ import annotations

from collections.abc import Mapping

from dihera.artifacts import parse_artifacts
from dihera.model import (
    Checkpoint,
    CleanPodPolicy,
    DIJob,
    FailurePolicy,
    Priority,
    ReclaimPolicy,
    SuccessOperator,
    SuccessPolicy,
    Task,
    TaskType,
)
from dihera.podtemplate import without_nulls
from dihera.render.providers import parse_env_provider
from dihera.shapes.dijob import DIJobSpec, as_dijob
from dihera.validation.lifecycle import checkpoint_tasks

__all__ = ["DEFAULT_NAMESPACE", "typed_job"]

DEFAULT_NAMESPACE = "default"


def _checkpoint(spec: DIJobSpec) -> Checkpoint | None:
    ckpt = spec.get("checkpoint")
    if ckpt is None:
        return None
    return Checkpoint(
        tasks=tuple(checkpoint_tasks(spec)),
        size=ckpt["size"],
        storage_class_name=ckpt.get("storageClassName"),
        access_mode=ckpt["accessMode"],
        mount_path=ckpt["mountPath"],
        reclaim_policy=ReclaimPolicy(ckpt["reclaimPolicy"]),
    )


def _success_policy(spec: DIJobSpec) -> SuccessPolicy | None:
    policy = spec.get("successPolicy")
    if policy is None:
        return None
    return SuccessPolicy(SuccessOperator(policy["operator"]), tuple(policy.get("targetTasks") or ()))


def typed_job(m: Mapping[str, object], namespace: str | None) -> DIJob:
    """The job ``m`` (valid, defaulted); ``namespace`` when its metadata has none, else ``default``."""
    job = as_dijob(m)  # valid: the shape the schema declares
    meta, spec = job.get("metadata") or {}, job["spec"]
    return DIJob(
        name=meta["name"],
        namespace=meta.get("namespace") or namespace or DEFAULT_NAMESPACE,
        tasks=tuple(
            Task(
                name=t["name"],
                type=TaskType(t["type"]),
                replicas=t["replicas"],
                template=without_nulls(t["template"]),  # as validated: null is not set
                env_provider=parse_env_provider(t.get("envProvider")),
                failure_policy=FailurePolicy(t.get("failurePolicy") or FailurePolicy.FAIL_JOB),
            )
            for t in spec["tasks"]
        ),
        priority=Priority(spec["priority"]),
        clean_pod_policy=CleanPodPolicy(spec["cleanPodPolicy"]),
        preemptible=spec["preemptible"],
        backoff_limit=spec["backoffLimit"],
        group=spec.get("group"),
        min_replicas=spec.get("minReplicas"),
        max_replicas=spec.get("maxReplicas"),
        volumes=tuple(without_nulls(spec.get("volumes") or [])),
        labels=dict(meta.get("labels") or {}),
        annotations=dict(meta.get("annotations") or {}),
        uid=meta.get("uid"),
        success_policy=_success_policy(spec),
        active_deadline_seconds=spec.get("activeDeadlineSeconds"),
        ttl_seconds_after_finished=spec.get("ttlSecondsAfterFinished"),
        suspend=bool(spec.get("suspend", False)),
        checkpoint=_checkpoint(spec),
        artifacts=parse_artifacts(spec),
    )
