"""The job the scaling tests scale: ``j`` with learner-0 (rank 0), collector-0 (1), collector-1 (2), evaluator-0 (3).

Shared by test_scaling.py and test_scaling_retired_pods.py.
"""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch  # type: ignore[import-untyped]

from dihera import load_job
from dihera.membership import Membership
from dihera.model import DIJob
from dihera.render import render
from dihera.scaling import workflow_patch
from tests.builders import job, task

__all__ = ["BASE", "base_job", "base_state", "patched_workflow"]

# learner-0 r0, collector-0 r1, collector-1 r2, evaluator-0 r3
BASE = job(task("learner"), task("collector", replicas=2), task("evaluator"), name="j")


def base_job(**spec: Any) -> DIJob:
    """BASE loaded, with the spec fields ``spec`` changed."""
    doc = copy.deepcopy(BASE)
    doc["spec"].update(spec)
    return load_job(doc)


def base_state(**spec: Any) -> tuple[DIJob, Membership, dict[str, Any]]:
    """``base_job(**spec)``, and its membership and Workflow as rendered."""
    job = base_job(**spec)
    rendered = render(job)
    return job, rendered.membership, rendered.workflow


def patched_workflow(workflow: dict[str, Any], membership: Membership) -> dict[str, Any]:
    """``workflow`` with the patch that converges it to ``membership`` applied."""
    patched: dict[str, Any] = jsonpatch.apply_patch(workflow, workflow_patch(membership, workflow))
    return patched
