"""Check a task's pod template against core/v1 PodTemplateSpec, field by field (pure).

The template is checked against a strict JSON schema of core/v1 PodTemplateSpec generated from the
Kubernetes client's models (``dihera/schema/podtemplate.v1.json``): a key core/v1 does not know is
an unknown field, named with the nearest valid one (a typo such as ``comand`` would otherwise vanish
silently); wrong types and missing required fields are reported with their path. On top of core/v1:
every container and init container needs an ``image``, ``restartPolicy`` is ``Never``, and the
fields dihera sets itself may not be set. Neither the Kubernetes client nor Hera is imported here.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

import jsonschema

from dihera.errors import Problem, format_value
from dihera.schema.podtemplate import pod_template_schema
from dihera.schema_problems import int_formats, schema_problems

__all__ = [
    "CONTAINER_KEYS",
    "RESERVED_POD_SPEC_FIELDS",
    "check_pod_template",
    "check_volume",
    "normalize_pod_spec",
    "without_nulls",
]

#: Set by dihera on every replica; a template may not set them.
RESERVED_POD_SPEC_FIELDS: Mapping[str, str] = {
    "hostname": "dihera sets it to <job>-<task>-<index>",
    "subdomain": "dihera sets it to di-<job>",
    "nodeName": "pods are placed by the scheduler",
}

#: The pod spec keys holding containers; each container needs an image.
CONTAINER_KEYS = ("initContainers", "containers")
_RESOURCE_KEYS = ("limits", "requests")


def _needs_limit(resource: str) -> bool:
    """Extended resources (``nvidia.com/gpu``) and huge pages cannot be overcommitted: limit = request."""
    return ("/" in resource and not resource.startswith("kubernetes.io/")) or resource.startswith("hugepages-")


def _quantity(value: object) -> object:
    """A number (``cpu: 1``) as the string the API server stores; anything else as it is."""
    return str(value) if isinstance(value, int | float) and not isinstance(value, bool) else value


def _missing_limits(requests: object, limits: object) -> dict[str, object]:
    """The requests of resources that need a limit (:func:`_needs_limit`) and have none."""
    if not isinstance(requests, Mapping) or not (limits is None or isinstance(limits, Mapping)):
        return {}
    have = limits if isinstance(limits, Mapping) else {}
    return {k: v for k, v in requests.items() if _needs_limit(k) and k not in have}


def _quantities(resources: object) -> object:
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
            out[key] = {k: _quantity(v) for k, v in amounts.items()}
    missing = _missing_limits(out.get("requests"), out.get("limits"))
    if missing:
        out["limits"] = {**(out.get("limits") or {}), **missing}
    return out


def _normalize_container(container: object) -> object:
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


@cache
def _validator(model: str | None = None) -> Any:
    """The strict PodTemplateSpec validator, or with ``model`` the one of a core/v1 part (``V1Volume``)."""
    schema = pod_template_schema()
    if model is not None:
        schema = {"$schema": schema["$schema"], "$ref": f"#/$defs/{model}", "$defs": schema["$defs"]}
    return jsonschema.validators.validator_for(schema)(schema, format_checker=int_formats())


def check_volume(volume: object, path: str) -> list[Problem]:
    """Every problem of one job-level volume (``spec.volumes[i]``), a core/v1 Volume."""
    return schema_problems(_validator("V1Volume"), without_nulls(volume), path, "core/v1 Volume")


def without_nulls(value: Any) -> Any:
    """``field: null`` means the field is not set, as the API server reads it."""
    if isinstance(value, Mapping):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v) for v in value]
    return value


def _rule_problems(spec: Mapping[str, object], spath: str) -> list[Problem]:
    """dihera's rules on top of core/v1: reserved fields, restartPolicy, an image per container."""
    problems: list[Problem] = []
    for key, why in RESERVED_POD_SPEC_FIELDS.items():
        if key in spec:
            problems.append(Problem(f"{spath}.{key}", f"must not be set ({why}); got {format_value(spec[key])}"))
    if spec.get("restartPolicy", "Never") != "Never":
        problems.append(
            Problem(
                f"{spath}.restartPolicy",
                f"must be Never, got {format_value(spec['restartPolicy'])}: "
                "a failed replica is restarted by the job (see backoffLimit)",
            )
        )
    for key in CONTAINER_KEYS:
        items = spec.get(key)
        for i, c in enumerate(items if isinstance(items, list) else []):
            if isinstance(c, Mapping) and not c.get("image"):
                problems.append(Problem(f"{spath}.{key}[{i}].image", "is required: the container image to run"))
    return problems


def check_pod_template(template: object, path: str) -> list[Problem]:
    """Every problem of one task's pod template; ``path`` is where it sits in the DIJob."""
    if not isinstance(template, Mapping):
        return [Problem(path, f"must be a pod template object, got {format_value(template)}")]
    spec = template.get("spec")
    checked = dict(template)
    if isinstance(spec, Mapping):
        checked["spec"] = normalize_pod_spec(spec)
    problems = schema_problems(_validator(), without_nulls(checked), path, "core/v1 PodTemplateSpec")
    if not isinstance(spec, Mapping):
        return [*problems, Problem(f"{path}.spec", "is required: a pod spec with at least one container")]
    spath = f"{path}.spec"
    problems += _rule_problems(spec, spath)
    problems += _check_unique_names(spec, spath)
    return problems


def _check_unique_names(spec: Mapping[str, object], path: str) -> list[Problem]:
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
