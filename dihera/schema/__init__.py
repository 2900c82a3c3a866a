"""The DIJob schema (source of truth: ``schemas/dijob.v2alpha1.json``) and the CRD made from it.

The package carries a generated copy of the schema; ``python -m dihera.schema.generate --check``
fails when any generated file drifts from the source.

- ``crd``: the CustomResourceDefinition from the schema; ``podtemplate``: core/v1 PodTemplateSpec as a strict
  JSON schema; ``generate``: every generated file, written or checked
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from dihera.schema.crd import GROUP, KIND, PLURAL, SHORT_NAME, SINGULAR, VERSION, crd_manifest

__all__ = [
    "API_VERSION",
    "GROUP",
    "KIND",
    "PLURAL",
    "SCHEMA_FILE",
    "SHORT_NAME",
    "SINGULAR",
    "VERSION",
    "crd_manifest",
    "dijob_schema",
]

SCHEMA_FILE = "dijob.v2alpha1.json"
API_VERSION = f"{GROUP}/{VERSION}"


@cache
def _schema_text() -> str:
    return resources.files(__package__).joinpath(SCHEMA_FILE).read_text(encoding="utf-8")


def dijob_schema() -> dict[str, Any]:
    """A fresh copy of the DIJob JSON schema (OpenAPI v3 structural schema of the CRD)."""
    loaded: dict[str, Any] = json.loads(_schema_text())
    return loaded
