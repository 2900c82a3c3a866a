"""What every conversion shares: collected notes, metadata, spec fields with the same meaning (pure)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from dihera.errors import Problem, format_value
from dihera.schema import API_VERSION, KIND

__all__ = ["Notes", "clean_pod_policy", "job_manifest", "metadata", "priority"]

_SERVER_METADATA = ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink")
_CLEAN_POD_POLICIES = {"running": "Running", "all": "All", "none": "None"}
_PRIORITIES = {"": "normal", "default": "normal", "normal": "normal", "high": "high"}


@dataclass
class Notes:
    """What a conversion says besides its output: warnings, information, and problems (fatal)."""

    warnings: list[str] = field(default_factory=list)
    info: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    def warn(self, path: str, message: str) -> None:
        self.warnings.append(f"{path}: {message}")

    def say(self, path: str, message: str) -> None:
        self.info.append(f"{path}: {message}")

    def problem(self, path: str, message: str) -> None:
        self.problems.append(Problem(path, message))


def metadata(doc: Mapping[str, object], notes: Notes) -> dict[str, object]:
    """name, namespace, labels and annotations; fields the API server set are dropped (said once)."""
    raw = doc.get("metadata")
    meta: Mapping[str, object] = raw if isinstance(raw, Mapping) else {}
    out = {k: meta[k] for k in ("name", "namespace", "labels", "annotations") if meta.get(k)}
    if not isinstance(out.get("name"), str):
        notes.problem("metadata.name", f"is required to name the job (got {format_value(meta.get('name'))})")
    dropped = [k for k in _SERVER_METADATA if k in meta]
    if dropped:
        notes.warn("metadata", f"dropped {', '.join(dropped)} (set by the API server of the old cluster)")
    if "status" in doc:
        notes.warn("status", "dropped (the controller writes a new status)")
    return out


def clean_pod_policy(value: object, path: str, notes: Notes) -> str | None:
    if value is None or value == "":
        return None
    policy = _CLEAN_POD_POLICIES.get(str(value).lower())
    if policy is None:
        notes.problem(path, f"{format_value(value)} is not valid; valid values: Running, All, None")
    elif policy != value:
        notes.say(path, f"{value!r} is written {policy!r}")
    return policy


def priority(value: object, path: str, notes: Notes) -> str | None:
    """v1alpha1's ``priorityClassName`` (default, high) and v2alpha1's ``priority`` (normal, high)."""
    if value is None:
        return None
    found = _PRIORITIES.get(str(value).lower())
    if found is None:
        notes.warn(path, f"{format_value(value)} has no equivalent; the job gets priority normal")
        return "normal"
    return found


def job_manifest(meta: Mapping[str, object], spec: Mapping[str, object]) -> dict[str, object]:
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": dict(meta), "spec": dict(spec)}
