"""Build the DIJob CustomResourceDefinition from the schema (pure)."""

from __future__ import annotations

import copy

from dihera.constants import PROFILINGS_CHECKPOINT

__all__ = ["GROUP", "KIND", "PLURAL", "SHORT_NAME", "SINGULAR", "VERSION", "crd_manifest"]

GROUP = "diengine.opendilab.org"
VERSION = "v2alpha1"
KIND = "DIJob"
PLURAL = "dijobs"
SINGULAR = "dijob"
SHORT_NAME = "dijob"

_JSON_SCHEMA_ONLY = ("$schema", "$id", "title")

PRINTER_COLUMNS: list[dict[str, object]] = [
    {"name": "Phase", "type": "string", "jsonPath": ".status.phase", "description": "Phase of the job"},
    {"name": "Ready", "type": "integer", "jsonPath": ".status.readyReplicas", "description": "Pods that are ready"},
    {"name": "Replicas", "type": "integer", "jsonPath": ".status.replicas", "description": "Desired pods of all tasks"},
    {
        "name": "Restarts",
        "type": "integer",
        "jsonPath": ".status.restarts",
        "description": "Replica restarts after failures",
    },
    {
        "name": "Return",
        "type": "number",
        "jsonPath": ".status.training.evaluation.value",
        "description": "The newest evaluation return (status.training.evaluation.value)",
    },
    {
        "name": "Iter",
        "type": "integer",
        "jsonPath": ".status.training.iteration",
        "description": "The learner's train iteration (status.training.iteration)",
    },
    {
        "name": "Steps/s",
        "type": "number",
        "jsonPath": ".status.training.envStepsPerSecond",
        "description": "Env steps per second, all collectors (status.training.envStepsPerSecond)",
    },
    {
        "name": "Reschedules",
        "type": "integer",
        "jsonPath": ".status.reschedules",
        "priority": 1,
        "description": "Replica count changes",
    },
    {
        "name": "Checkpoint",
        "type": "integer",
        "jsonPath": f".status.profilings.{PROFILINGS_CHECKPOINT}.iteration",
        "priority": 1,
        "description": "The iteration of the last checkpoint the job reported (status.profilings.checkpoint)",
    },
    {
        "name": "Progress",
        "type": "string",
        "jsonPath": ".status.progress",
        "priority": 1,
        "description": "The Workflow's progress N/M (the replicas' self-reported progress, as the Argo UI shows it)",
    },
    {
        "name": "Workflow",
        "type": "string",
        "jsonPath": ".status.workflowName",
        "priority": 1,
        "description": "The Argo Workflow running the job",
    },
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
]


def _openapi(schema: dict[str, object]) -> dict[str, object]:
    out = copy.deepcopy(schema)
    for key in _JSON_SCHEMA_ONLY:
        out.pop(key, None)
    return out


def crd_manifest(schema: dict[str, object]) -> dict[str, object]:
    """The CRD manifest for ``schema`` (the DIJob JSON schema)."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{PLURAL}.{GROUP}",
            "labels": {"app.kubernetes.io/part-of": "dihera"},
        },
        "spec": {
            "group": GROUP,
            "names": {
                "kind": KIND,
                "listKind": f"{KIND}List",
                "plural": PLURAL,
                "singular": SINGULAR,
                "shortNames": [SHORT_NAME],
                "categories": ["all", "dihera"],
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": PRINTER_COLUMNS,
                    "schema": {"openAPIV3Schema": _openapi(schema)},
                }
            ],
        },
    }
