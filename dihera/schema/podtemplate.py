"""core/v1 PodTemplateSpec as a strict JSON schema, generated from the Kubernetes client's models.

The schema ships with the package (``podtemplate.v1.json``) so that checking a pod template needs
neither the Kubernetes client nor Hera at run time; ``python -m dihera.schema.generate`` rebuilds it
from the installed ``kubernetes`` package (whose models forbid unknown fields) and ``--check`` fails
on drift. Every object lists its fields and allows no others; each carries its core/v1 name as
``title`` so that messages can say which object a field belongs to.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from typing import Any

__all__ = ["POD_TEMPLATE_FILE", "build_pod_template_schema", "pod_template_schema"]

POD_TEMPLATE_FILE = "podtemplate.v1.json"
_DROPPED_KEYS = frozenset({"description", "title", "default"})
_MODEL_NAME = re.compile(r"^(?:Core)?V1(\w+)$")


@cache
def _schema_text() -> str:
    return resources.files(__package__).joinpath(POD_TEMPLATE_FILE).read_text(encoding="utf-8")


def pod_template_schema() -> dict[str, object]:
    """A fresh copy of the strict core/v1 PodTemplateSpec JSON schema (draft 2020-12)."""
    loaded: dict[str, object] = json.loads(_schema_text())
    return loaded


def _clean(node: Any) -> Any:
    """Drop prose and defaults; ``anyOf [X, null]`` becomes X (nulls are removed before checking)."""
    if isinstance(node, list):
        return [_clean(v) for v in node]
    if not isinstance(node, dict):
        return node
    options = node.get("anyOf")
    if isinstance(options, list) and {"type": "null"} in options and len(options) == 2:
        (kept,) = (o for o in options if o != {"type": "null"})
        return _clean(kept)
    return {k: _clean(v) for k, v in node.items() if k not in _DROPPED_KEYS}


def _titled(name: str, schema: dict[str, object]) -> dict[str, object]:
    match = _MODEL_NAME.match(name)
    return {"title": f"core/v1 {match.group(1) if match else name}", **schema}


def build_pod_template_schema() -> dict[str, object]:
    """The strict PodTemplateSpec schema from the installed Kubernetes client (generation time only)."""
    from kubernetes.client import V1PodTemplateSpec

    raw = V1PodTemplateSpec.model_json_schema(by_alias=True)
    defs = {name: _titled(name, _clean(schema)) for name, schema in sorted(raw.pop("$defs").items())}
    root = _titled("V1PodTemplateSpec", _clean(raw))
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **root, "$defs": defs}
