"""A DIJob's structure (pure): its identity, the schema checked strictly, the schema's defaults.

Input is strict: a field the schema does not know (``spec.backofflimit``, ``tasks[].replica``, a misspelt pod
template field) is an error naming the nearest valid field, as ``kubectl apply --validate=strict`` does at the
API server. ``metadata`` is not in the CRD's schema (the API server decodes it as ObjectMeta), so it is checked
here by hand. The rules of the other modules read a document the schema may have refused: :func:`obj`,
:func:`arr` and :class:`Defaulted` read it without trusting its types (a field of the wrong type is the
schema's problem to report, never a crash of a rule).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

import jsonschema

from dihera.errors import Problem, format_value
from dihera.model import TaskType
from dihera.schema import API_VERSION, KIND, dijob_schema
from dihera.schema_problems import int_formats, schema_problems, unknown_field

__all__ = [
    "SINGLETON_TYPES",
    "Defaulted",
    "apply_defaults",
    "arr",
    "identity_problems",
    "obj",
    "structure_problems",
]

#: The task types a task is named after when it has no name; a job has at most one task of each.
SINGLETON_TYPES = (TaskType.LEARNER, TaskType.COLLECTOR, TaskType.EVALUATOR)

#: The fields of the API server's ObjectMeta (metadata is not in the CRD's schema; the API server decodes it).
_OBJECT_META = (
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation", "creationTimestamp",
    "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations", "ownerReferences", "finalizers",
    "managedFields",
)  # fmt: skip


def obj(value: object) -> Mapping[str, object]:
    """``value`` when it is an object, else an empty one: the rules read a document the schema may have
    refused (a field of the wrong type is the schema's problem to report, never a crash of a rule)."""
    return value if isinstance(value, Mapping) else {}


def arr(value: object) -> list[object]:
    """``value`` when it is a list, else an empty one (see :func:`obj`)."""
    return value if isinstance(value, list) else []


@dataclass(frozen=True)
class Defaulted:
    """What the cross-field rules read: the job's name (``""`` when it has none) and its spec with the schema's
    defaults applied (:func:`apply_defaults`), of types the schema may have refused."""

    name: str
    spec: Mapping[str, object]

    @property
    def tasks(self) -> list[Mapping[str, object]]:
        """The tasks that are objects; an index ``spec.tasks[i]`` a rule reports counts only these."""
        return [t for t in arr(self.spec.get("tasks")) if isinstance(t, Mapping)]


def _strict(schema: dict[str, Any]) -> dict[str, Any]:
    """Objects with declared fields allow no others, except where the CRD keeps unknown fields."""
    if schema.get("type") == "object" and "properties" in schema:
        if not schema.get("x-kubernetes-preserve-unknown-fields"):
            schema.setdefault("additionalProperties", False)
        for key, sub in schema["properties"].items():
            if key != "template":  # checked against core/v1 by check_pod_template
                _strict(sub)
    if isinstance(schema.get("items"), dict):
        _strict(schema["items"])
    return schema


@cache
def _validator() -> Any:
    schema = dijob_schema()
    schema["properties"]["status"] = {}  # status is the controller's, never the user's: not checked
    schema["additionalProperties"] = False  # metadata stays open: it is the API server's ObjectMeta
    schema["title"] = "a DIJob"
    spec = _strict(schema["properties"]["spec"])
    spec["title"] = "the DIJob spec"
    spec["properties"]["tasks"]["items"]["title"] = "a DIJob task"
    spec["properties"]["successPolicy"]["title"] = "the DIJob successPolicy"
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema, format_checker=int_formats())


def structure_problems(manifest: Mapping[str, object]) -> list[Problem]:
    """``manifest`` against the DIJob's schema, strictly; every unknown field named with the nearest valid one."""
    return schema_problems(_validator(), manifest, "", "a DIJob")


def _metadata_problems(meta: object) -> list[Problem]:
    """``metadata`` as the API server decodes it (strictly, as kubectl sends it): an object of ObjectMeta's
    fields, its labels and annotations maps of strings."""
    if meta is None:
        return []
    if not isinstance(meta, Mapping):
        return [Problem("metadata", f"must be of type object, got {format_value(meta)}")]
    unknown = [k for k in meta if k not in _OBJECT_META]
    problems = [unknown_field(f"metadata.{k}", str(k), _OBJECT_META, "ObjectMeta") for k in unknown]
    for field in ("labels", "annotations"):
        value = meta.get(field)
        if value is not None and not isinstance(value, Mapping):
            problems.append(Problem(f"metadata.{field}", f"must be a map of strings, got {format_value(value)}"))
        for key, v in obj(value).items():
            if not isinstance(v, str):
                problems.append(Problem(f"metadata.{field}.{key}", f"must be a string, got {format_value(v)}"))
    return problems


def identity_problems(manifest: Mapping[str, object]) -> list[Problem]:
    """``metadata`` (:func:`_metadata_problems`), then ``apiVersion`` and ``kind``: present and the DIJob's."""
    problems = _metadata_problems(manifest.get("metadata"))
    for field, expected in (("apiVersion", API_VERSION), ("kind", KIND)):
        if field not in manifest:
            problems.append(Problem(field, f"is required: {expected}"))
        elif manifest[field] != expected:
            problems.append(Problem(field, f"{format_value(manifest[field])} is not valid; expected {expected}"))
    return problems


def _fill(schema: Mapping[str, Any], value: Any) -> Any:
    if schema.get("type") == "integer" and isinstance(value, float) and value.is_integer():
        return int(value)  # 3.0: an integer to JSON schema and the API server, an int to the code
    if isinstance(value, dict) and schema.get("type") == "object":
        for key, sub in schema.get("properties", {}).items():
            if key not in value and "default" in sub:
                value[key] = copy.deepcopy(sub["default"])
            if key in value:
                value[key] = _fill(sub, value[key])
    elif isinstance(value, list) and "items" in schema:
        return [_fill(schema["items"], v) for v in value]
    return value


@cache
def _defaults_schema() -> dict[str, Any]:
    """The schema :func:`_fill` reads (never writes: it copies each default): parsed once, not per document."""
    return dijob_schema()


def apply_defaults(manifest: Mapping[str, object]) -> dict[str, object]:
    """A copy of ``manifest`` with the schema's defaults applied, and unnamed tasks named after their type."""
    out: dict[str, object] = _fill(_defaults_schema(), copy.deepcopy(dict(manifest)))
    for task in arr(obj(out.get("spec")).get("tasks")):
        if not isinstance(task, dict) or "name" in task:
            continue
        kind = task.get("type")
        if isinstance(kind, str) and kind in {t.value for t in SINGLETON_TYPES}:
            task["name"] = kind
    return out
