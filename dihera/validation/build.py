"""The typed :class:`~dihera.model.DIJob` from a valid DIJob with the schema's defaults applied (pure).

Nothing is checked here: :func:`~dihera.validation.load_job` builds only what ``validate`` found valid, so every
field this reads is there and of its type.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dihera.artifacts import parse_artifacts
from dihera.model import (
    DEFAULT_SCALE_DOWN,
    DEFAULT_SCALE_UP,
    Autoscaling,
    Checkpoint,
    CleanPodPolicy,
    DIJob,
    FailurePolicy,
    Plateau,
    Priority,
    ReclaimPolicy,
    ScalingPolicy,
    ScalingRules,
    SuccessOperator,
    SuccessPolicy,
    Task,
    TaskType,
    TrainingPolicy,
    TrainingTarget,
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


def _rules(given: Mapping[str, Any] | None, default: ScalingRules) -> ScalingRules:
    if given is None:
        return default
    policies = given.get("policies")
    return ScalingRules(
        given.get("stabilizationWindowSeconds", default.stabilization_window_seconds),
        tuple(ScalingPolicy(p["type"], p["value"], p["periodSeconds"]) for p in policies)
        if policies
        else default.policies,
        given["selectPolicy"],
    )


def _autoscaling(task: Mapping[str, Any]) -> Autoscaling | None:
    given = task.get("autoscaling")
    if given is None:
        return None
    behavior = given.get("behavior") or {}
    return Autoscaling(
        max_replicas=given["maxReplicas"],
        min_replicas=given["minReplicas"],
        target_data_wait_fraction=float(given["targetDataWaitFraction"]),
        target_replay_ratio=float(given["targetReplayRatio"]) if "targetReplayRatio" in given else None,
        stale_after_seconds=given["staleAfterSeconds"],
        scale_up=_rules(behavior.get("scaleUp"), DEFAULT_SCALE_UP),
        scale_down=_rules(behavior.get("scaleDown"), DEFAULT_SCALE_DOWN),
    )


def _training_policy(spec: Mapping[str, Any]) -> TrainingPolicy | None:
    policy = spec.get("trainingPolicy")
    if policy is None:
        return None
    target, plateau = policy.get("target"), policy.get("plateau")
    return TrainingPolicy(
        target=TrainingTarget(target["metric"], float(target["value"])) if target is not None else None,
        plateau=Plateau(plateau["evaluations"], float(plateau["minDelta"])) if plateau is not None else None,
        fail_on_non_finite=policy["failOnNonFinite"],
    )


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
                autoscaling=_autoscaling(t),
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
        training_policy=_training_policy(spec),
    )
