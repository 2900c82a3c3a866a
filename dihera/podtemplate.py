"""Check a task's pod template against the typed core/v1 models, field by field (pure).

Containers, init containers, volumes and the other typed parts go through Hera's Argo/Kubernetes
models; a key those models do not know is reported as an unknown field (a typo such as ``comand``
would otherwise vanish silently). Top-level pod spec keys are checked against core/v1 PodSpec.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pydantic
from hera.workflows import models as m
from kubernetes.client import V1PodSpec

from dihera.errors import Problem, format_value

__all__ = [
    "POD_SPEC_FIELDS",
    "RESERVED_POD_SPEC_FIELDS",
    "TYPED_LIST_FIELDS",
    "TYPED_OBJECT_FIELDS",
    "check_pod_template",
    "normalize_pod_spec",
]

POD_SPEC_FIELDS: frozenset[str] = frozenset(V1PodSpec.attribute_map.values())

#: Set by dihera on every replica; a template may not set them.
RESERVED_POD_SPEC_FIELDS: Mapping[str, str] = {
    "hostname": "dihera sets it to <job>-<task>-<index>",
    "subdomain": "dihera sets it to di-<job>",
    "nodeName": "pods are placed by the scheduler",
}

TYPED_LIST_FIELDS: Mapping[str, type[pydantic.BaseModel]] = {
    "containers": m.ContainerNode,
    "initContainers": m.UserContainer,
    "volumes": m.Volume,
    "tolerations": m.Toleration,
    "hostAliases": m.HostAlias,
    "imagePullSecrets": m.LocalObjectReference,
}
TYPED_OBJECT_FIELDS: Mapping[str, type[pydantic.BaseModel]] = {
    "affinity": m.Affinity,
    "securityContext": m.PodSecurityContext,
    "dnsConfig": m.PodDNSConfig,
}
_RESOURCE_KEYS = ("limits", "requests")


def _needs_limit(resource: str) -> bool:
    """Extended resources (``nvidia.com/gpu``) and huge pages cannot be overcommitted: limit = request."""
    return ("/" in resource and not resource.startswith("kubernetes.io/")) or resource.startswith("hugepages-")


def _quantities(resources: Any) -> Any:
    """Quantities as the API server stores them.

    Numbers (``cpu: 1``) become strings. An extended resource that is only requested
    (DI-orchestrator's examples request ``nvidia.com/gpu`` so) gets the same limit, the only value
    Kubernetes accepts for it.
    """
    if not isinstance(resources, Mapping):
        return resources
    out = dict(resources)
    for key in _RESOURCE_KEYS:
        amounts = out.get(key)
        if isinstance(amounts, Mapping):
            out[key] = {
                k: (str(v) if isinstance(v, int | float) and not isinstance(v, bool) else v) for k, v in amounts.items()
            }
    requests, limits = out.get("requests"), out.get("limits")
    if isinstance(requests, Mapping) and (limits is None or isinstance(limits, Mapping)):
        missing = {k: v for k, v in requests.items() if _needs_limit(k) and k not in (limits or {})}
        if missing:
            out["limits"] = {**(limits or {}), **missing}
    return out


def _normalize_container(container: Any) -> Any:
    if not isinstance(container, Mapping) or "resources" not in container:
        return container
    return {**container, "resources": _quantities(container["resources"])}


def normalize_pod_spec(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The pod spec with quantities as the API server stores them (see :func:`_quantities`)."""
    out = dict(spec)
    for key in ("containers", "initContainers"):
        if isinstance(out.get(key), list):
            out[key] = [_normalize_container(c) for c in out[key]]
    if "overhead" in out and isinstance(out["overhead"], Mapping):
        out["overhead"] = {k: str(v) for k, v in out["overhead"].items()}
    return out


def _loc(path: str, loc: tuple[int | str, ...]) -> str:
    out = path
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f".{_alias(part)}"
    return out


def _alias(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def _dropped(given: Any, kept: Any, path: str) -> list[Problem]:
    """Keys present in ``given`` that the typed model did not keep: unknown fields."""
    problems: list[Problem] = []
    if isinstance(given, Mapping) and isinstance(kept, Mapping):
        for key, value in given.items():
            if key not in kept:
                if value is not None:
                    problems.append(Problem(f"{path}.{key}", "unknown field (not part of the core/v1 pod spec)"))
            else:
                problems.extend(_dropped(value, kept[key], f"{path}.{key}"))
    elif isinstance(given, list) and isinstance(kept, list):
        for i, (g, k) in enumerate(zip(given, kept, strict=False)):
            problems.extend(_dropped(g, k, f"{path}[{i}]"))
    return problems


def _check_typed(value: Any, model: type[pydantic.BaseModel], path: str) -> list[Problem]:
    if not isinstance(value, Mapping):
        return [Problem(path, f"must be an object, got {format_value(value)}")]
    try:
        kept = model.model_validate(value).model_dump(by_alias=True, exclude_none=True, mode="json")
    except pydantic.ValidationError as err:
        return [
            Problem(_loc(path, tuple(e["loc"])), f"{e['msg'].lower()} (got {format_value(e.get('input'))})")
            for e in err.errors()
        ]
    return _dropped(value, kept, path)


def _check_string_map(value: Any, path: str) -> list[Problem]:
    if not isinstance(value, Mapping):
        return [Problem(path, f"must be a map of strings, got {format_value(value)}")]
    return [
        Problem(f"{path}.{k}", f"must be a string, got {format_value(v)}")
        for k, v in value.items()
        if not isinstance(v, str)
    ]


def check_pod_template(template: Any, path: str) -> list[Problem]:
    """Every problem of one task's pod template; ``path`` is where it sits in the DIJob."""
    if not isinstance(template, Mapping):
        return [Problem(path, f"must be a pod template object, got {format_value(template)}")]
    problems: list[Problem] = []
    metadata = template.get("metadata") or {}
    for key in ("labels", "annotations"):
        if key in metadata:
            problems += _check_string_map(metadata[key], f"{path}.metadata.{key}")
    spec = template.get("spec")
    if not isinstance(spec, Mapping):
        return [*problems, Problem(f"{path}.spec", "is required: a pod spec with at least one container")]
    spec = normalize_pod_spec(spec)
    spath = f"{path}.spec"
    for key, value in spec.items():
        where = f"{spath}.{key}"
        if key not in POD_SPEC_FIELDS:
            problems.append(Problem(where, "unknown field (not part of the core/v1 pod spec)"))
        elif key in RESERVED_POD_SPEC_FIELDS:
            problems.append(
                Problem(where, f"must not be set ({RESERVED_POD_SPEC_FIELDS[key]}); got {format_value(value)}")
            )
        elif key == "restartPolicy" and value != "Never":
            problems.append(
                Problem(
                    where,
                    f"must be Never, got {format_value(value)}: "
                    "a failed replica is restarted by the job (see backoffLimit)",
                )
            )
        elif key in TYPED_LIST_FIELDS:
            if not isinstance(value, list):
                problems.append(Problem(where, f"must be a list, got {format_value(value)}"))
                continue
            for i, item in enumerate(value):
                problems += _check_typed(item, TYPED_LIST_FIELDS[key], f"{where}[{i}]")
        elif key in TYPED_OBJECT_FIELDS:
            problems += _check_typed(value, TYPED_OBJECT_FIELDS[key], where)
        elif key == "nodeSelector":
            problems += _check_string_map(value, where)
    problems += _check_unique_names(spec, spath)
    return problems


def _check_unique_names(spec: Mapping[str, Any], path: str) -> list[Problem]:
    problems: list[Problem] = []
    seen: dict[str, str] = {}
    for key in ("initContainers", "containers"):
        items = spec.get(key)
        if not isinstance(items, list):
            continue
        for i, c in enumerate(items):
            name = c.get("name") if isinstance(c, Mapping) else None
            if isinstance(name, str):
                if name in seen:
                    problems.append(Problem(f"{path}.{key}[{i}].name", f"{name!r} is already the name of {seen[name]}"))
                seen.setdefault(name, f"{path}.{key}[{i}]")
    return problems
