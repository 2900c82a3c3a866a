"""DI-orchestrator 1.0's DIJob (``v2alpha1`` with ``spec.template``; also ``v1alpha2``) -> tasks (pure).

One pod template for every worker, ``minReplicas`` as the initial count, job-level min/max, and
``engineFields`` (``topology``, ``parallelWorkers``; top-level in ``v1alpha2``) that dihera does not
pass to DI-engine. It becomes one task ``worker`` of type ``none`` with ``minReplicas`` replicas.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import cast

from dihera.convert.common import Notes, clean_pod_policy, job_manifest, metadata, priority
from dihera.convert.scan import runtime_variable_warnings, strings
from dihera.errors import format_value

__all__ = ["TASK_NAME", "convert_v1shape", "is_v1shape"]

TASK_NAME = "worker"
_ENGINE_FLAGS = {"topology": "--topology", "parallelWorkers": "--parallel-workers"}
_KNOWN = {
    "group",
    "priority",
    "cleanPodPolicy",
    "preemptible",
    "backoffLimit",
    "minReplicas",
    "maxReplicas",
    "volumes",
    "template",
    "engineFields",
    *_ENGINE_FLAGS,
}


def is_v1shape(doc: Mapping[str, object]) -> bool:
    spec = doc.get("spec")
    return isinstance(spec, Mapping) and "template" in spec and "tasks" not in spec


def _engine_fields(spec: Mapping[str, object], notes: Notes) -> None:
    fields: dict[str, object] = dict(given) if isinstance(given := spec.get("engineFields"), Mapping) else {}
    fields.update({k: spec[k] for k in _ENGINE_FLAGS if k in spec})
    commands = " ".join(text for _, text in strings(spec.get("template"), ""))
    for key, value in fields.items():
        path = f"spec.engineFields.{key}" if key not in spec else f"spec.{key}"
        flag = _ENGINE_FLAGS.get(key)
        if flag is None:
            notes.warn(path, f"{format_value(value)} has no equivalent in dihera; dropped")
        elif flag in commands:
            notes.say(path, f"dropped; the command already passes {flag}")
        else:
            notes.warn(
                path, f"{format_value(value)} is not passed to DI-engine by dihera: add `{flag} {value}` to ditask"
            )
        if key == "parallelWorkers" and isinstance(value, int) and value > 1:
            notes.warn(
                path, "more than 1 parallel worker per pod needs consecutive ports per pod; see docs/migration.md"
            )


def _spec_fields(spec: Mapping[str, object], notes: Notes) -> dict[str, object]:
    """priority, cleanPodPolicy, preemptible and backoffLimit carried over; group and unknown fields
    dropped (said)."""
    out: dict[str, object] = {}
    if (p := priority(spec.get("priority"), "spec.priority", notes)) is not None:
        out["priority"] = p
    if (c := clean_pod_policy(spec.get("cleanPodPolicy"), "spec.cleanPodPolicy", notes)) is not None:
        out["cleanPodPolicy"] = c
    for key in ("preemptible", "backoffLimit"):
        if key in spec:
            out[key] = spec[key]
    if spec.get("group"):
        notes.warn("spec.group", f"{format_value(spec['group'])} has no equivalent in dihera; dropped")
    for key in sorted(set(spec) - _KNOWN):
        notes.warn(f"spec.{key}", "unknown to DI-orchestrator 1.0 and to dihera; dropped")
    return out


def _replicas(spec: Mapping[str, object], notes: Notes) -> tuple[int, dict[str, int]]:
    """The task's replicas (``minReplicas``, at least 1) and the job's bounds (``minReplicas``,
    ``maxReplicas`` raised to the replicas)."""
    low, high = spec.get("minReplicas"), spec.get("maxReplicas")
    replicas = low if isinstance(low, int) and low >= 1 else 1
    bounds: dict[str, int] = {}
    if isinstance(low, int) and low >= 1:
        bounds["minReplicas"] = low
        notes.say("spec.minReplicas", f"{low} is both the task's initial replicas and the job's lower bound")
    else:
        notes.warn("spec.minReplicas", f"{format_value(low)}: the task starts with 1 replica (dihera's minimum)")
    if isinstance(high, int) and high >= 1:
        bounds["maxReplicas"] = max(high, replicas)
        if high < replicas:
            notes.warn("spec.maxReplicas", f"{high} is below minReplicas; raised to {replicas}")
    return replicas, bounds


def _template(spec: Mapping[str, object], notes: Notes) -> dict[str, object]:
    """The one pod template, that becomes the task ``worker``'s ({} when it is not one: a problem)."""
    template = spec.get("template")
    if not isinstance(template, Mapping) or not isinstance(template.get("spec"), Mapping):
        notes.problem("spec.template", f"must be a pod template with a spec (got {format_value(template)})")
        template = {}
    for field, warning in runtime_variable_warnings(template, "spec.template"):
        notes.warn(field, warning)
    notes.say(
        "spec.template",
        f"became the task {TASK_NAME!r} of type none; pod hostnames are <job>-{TASK_NAME}-<index>",
    )
    return dict(template)


def convert_v1shape(doc: Mapping[str, object], notes: Notes) -> dict[str, object]:
    spec = cast(Mapping[str, object], doc["spec"])  # an object: is_v1shape
    meta = metadata(doc, notes)
    out = _spec_fields(spec, notes)
    _engine_fields(spec, notes)
    replicas, bounds = _replicas(spec, notes)
    out.update(bounds)
    if spec.get("volumes"):
        out["volumes"] = list(cast(Iterable[object], spec["volumes"]))  # as the document gives them
    out["tasks"] = [{"name": TASK_NAME, "type": "none", "replicas": replicas, "template": _template(spec, notes)}]
    return job_manifest(meta, out)
