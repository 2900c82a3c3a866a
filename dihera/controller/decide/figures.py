"""The job's RL figures in the Argo UI (pure): the Workflow annotations that show ``status.training``.

The Argo UI shows a Workflow's description in its list row and drawer (:mod:`dihera.argo_ui`). Once the
replicas report figures (``status.training``, written by the di-server), the description carries them in one
sentence after the membership's (:func:`~dihera.argo_ui.training_summary`), and the sentence is kept in its own
annotation so that a scale, which rewrites the description for the new membership, keeps it.

:func:`figures_annotations` answers what to write: nothing while the Workflow already shows the sentence, or while
its membership annotations are not yet the ConfigMap's (a scale is converging: its own rewrite comes first, and a
write computed from the other membership would undo it). The controller writes at most one such patch per job
every :data:`~dihera.constants.FIGURES_SHOWN_EVERY` seconds (each write wakes Argo's controller), with the
Workflow's resourceVersion as precondition.
"""

from __future__ import annotations

from dihera.argo_ui import training_summary, ui_annotations
from dihera.constants import ANNOTATION_GENERATION, ANNOTATION_TRAINING_SUMMARY
from dihera.controller.decide.view import JobView

__all__ = ["figures_annotations"]


def figures_annotations(view: JobView) -> dict[str, str] | None:
    """The Workflow annotations that show the job's figures (description, columns, the figures' sentence), or
    None when there is nothing to change or it is not the time (no figures, no Workflow, a scale converging)."""
    job, membership, workflow = view.job, view.membership, view.workflow
    training = view.status.get("training")
    if job is None or membership is None or workflow is None or view.foreign or training is None:
        return None
    summary = training_summary(training)
    annotations = (workflow.get("metadata") or {}).get("annotations") or {}
    if summary is None or annotations.get(ANNOTATION_TRAINING_SUMMARY) == summary:
        return None
    if annotations.get(ANNOTATION_GENERATION) != str(membership.generation):
        return None
    tasks = [(t.name, t.type.value, len(membership.of_task(t.name))) for t in job.tasks]
    return ui_annotations(job.id, tasks, membership.generation, summary)
