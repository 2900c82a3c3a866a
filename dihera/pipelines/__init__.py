"""Pipelines (pure): a DIJob trained, then its policy evaluated and exported, as one Argo Workflow.

- :mod:`dihera.pipelines.pipeline`: :class:`Pipeline` and its :class:`Step` (what runs after training);
- :mod:`dihera.pipelines.workflow`: the Workflow, rendered with Hera.

Built through :mod:`dihera.experiment` (``ex.pipeline``, ``ex.step``); docs/experiments.md.
"""

from dihera.pipelines.pipeline import POLICY_PATH, Pipeline, PipelineError, Step
from dihera.pipelines.workflow import build_pipeline_workflow

__all__ = ["POLICY_PATH", "Pipeline", "PipelineError", "Step", "build_pipeline_workflow"]
