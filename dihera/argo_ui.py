"""How a DIJob reads in the Argo UI (pure): the Workflow's title, description and column annotations,
and the ``columns`` and ``links`` of Argo's ``workflow-controller-configmap`` that point at the di-server.

The workflow list shows the title and, on one line, the description (``escapeInvalidMarkdown`` turns
line breaks into spaces and the row cuts the rest with an ellipsis), so the description's first
sentence says the replicas per task alone; the task table after it shows in the expanded row and the
drawer (GitHub-flavoured markdown). Columns read annotations the renderer writes and scaling updates
(annotations, not labels: a label value allows no spaces or commas and at most 63 characters).

Links: ``workflow`` scope opens the job in the di-server or, on a sweep's Workflow, the sweep's view (its
trials, progress and best so far): the di-server redirects by the Workflow's labels, which Argo puts in the
link's query (a label the Workflow lacks becomes empty); ``pod`` scope the replica running that pod and,
on a sweep's trial node (its pod creates the trial's DIJob, labelled with the pod's name: dihera.sweeps),
the trial's DIJob. Argo shows every pod link on every pod node; each view says when the pod is not one it
knows. Argo substitutes ``${metadata.namespace}``, ``${metadata.name}`` (the Workflow's, or the pod's name)
and ``${workflow.metadata.labels.<key>}``. The same values go into the dev cluster's ConfigMap
(``ci/devcluster``), argo-helm's ``controller.columns`` / ``controller.links`` (docs/argo-ui.md) and
the tests.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import yaml

from dihera.constants import (
    ANNOTATION_GENERATION,
    ANNOTATION_REPLICAS,
    ANNOTATION_TASK_REPLICAS,
    ANNOTATION_TRAINING_SUMMARY,
    ANNOTATION_WORKFLOW_DESCRIPTION,
    LABEL_EXPERIMENT,
    LABEL_GOAL,
    LABEL_JOB,
    LABEL_METRIC,
    LABEL_TRIALS,
)
from dihera.shapes.training import TrainingStatus

__all__ = [
    "EXPERIMENT_VIEW_PATH",
    "JOB_VIEW_PATH",
    "POD_VIEW_PATH",
    "TRIAL_VIEW_PATH",
    "UI_COLUMNS",
    "WORKFLOW_LINK_PATH",
    "argo_config",
    "columns",
    "configmap_data",
    "describe",
    "helm_values",
    "links",
    "task_summary",
    "training_summary",
    "ui_annotations",
]

#: (column name, annotation key) of the workflow list's custom columns.
UI_COLUMNS: tuple[tuple[str, str], ...] = (
    ("Replicas", ANNOTATION_REPLICAS),
    ("Tasks", ANNOTATION_TASK_REPLICAS),
    ("Generation", ANNOTATION_GENERATION),
)
#: The di-server's read-only views the links open (``dihera.server.routes.views``), before substitution.
JOB_VIEW_PATH = "/ui/namespaces/{namespace}/dijobs/{name}"
POD_VIEW_PATH = "/ui/namespaces/{namespace}/dijobs/{name}/pods/{pod}"
#: Redirects to the job view of the DIJob a sweep's trial pod created (``diengine/trial-pod``).
TRIAL_VIEW_PATH = "/ui/namespaces/{namespace}/trials/{pod}"
#: A sweep's view: its trials' DIJobs (``diengine/experiment``), counts and best so far.
EXPERIMENT_VIEW_PATH = "/ui/namespaces/{namespace}/experiments/{name}"
#: The workflow link: redirects to the job view or the sweep's, by the labels in its query.
WORKFLOW_LINK_PATH = "/ui/namespaces/{namespace}/workflows/{name}"
_JOB_OF_WORKFLOW = f"${{workflow.metadata.labels.{LABEL_JOB}}}"
#: (query key, Workflow label) of the workflow link.
_WORKFLOW_QUERY = (("dijob", LABEL_JOB), ("experiment", LABEL_EXPERIMENT), ("metric", LABEL_METRIC),
                   ("goal", LABEL_GOAL), ("trials", LABEL_TRIALS))  # fmt: skip
_URL = re.compile(r"^https?://[^/\s?#]+(/[^\s?#]*)?$")


def task_summary(tasks: Sequence[tuple[str, str, int]]) -> str:
    """``learner 1, collector 2``: each task's live replicas, in the job's task order."""
    return ", ".join(f"{name} {count}" for name, _, count in tasks)


def describe(job_id: str, tasks: Sequence[tuple[str, str, int]], generation: int, training: str | None = None) -> str:
    """The Workflow's description: one sentence the list row can show alone, the RL figures' sentence
    (:func:`training_summary`) when the job reported any, then the task table."""
    rows = "\n".join(f"| {name} | {type_} | {count} |" for name, type_, count in tasks)
    total = sum(count for _, _, count in tasks)
    figures = f"{training}\n\n" if training else ""
    return (
        f"{total} replicas: {task_summary(tasks)} (membership generation {generation}).\n\n{figures}"
        f"| task | type | replicas |\n|---|---|---|\n{rows}\n\n"
        f"DI-engine job `{job_id}`.\n"
    )


def training_summary(training: TrainingStatus) -> str | None:
    """The RL figures of ``status.training`` as one sentence (None: nothing reported yet), e.g. ``Training:
    iteration 900, return 197 (best 197 at iteration 900), 450 env steps/s, data wait 10%, policy lag 2.``

    Rounded as a reader reads them, so that a job whose figures barely move keeps the same sentence (the
    controller rewrites the Workflow's description only when the sentence changes)."""
    parts: list[str] = []
    if (iteration := training.get("iteration")) is not None:
        parts.append(f"iteration {iteration}")
    evaluation = training.get("evaluation") or {}
    if (value := evaluation.get("value")) is not None:
        best, at = evaluation.get("best"), evaluation.get("bestIteration")
        tail = f" (best {best:.4g} at iteration {at})" if best is not None and at is not None else ""
        parts.append(f"return {value:.4g}{tail}")
    if (steps := training.get("envStepsPerSecond")) is not None:
        parts.append(f"{steps:.3g} env steps/s")
    if (wait := training.get("dataWaitFraction")) is not None:
        parts.append(f"data wait {wait:.0%}")
    if (lag := (training.get("policyLag") or {}).get("p50")) is not None:
        parts.append(f"policy lag {lag:g}")
    if nonfinite := training.get("nonFinite"):
        parts.append("non-finite: " + ", ".join(nonfinite))
    return f"Training: {', '.join(parts)}." if parts else None


def ui_annotations(
    job_id: str, tasks: Sequence[tuple[str, str, int]], generation: int, training: str | None = None
) -> dict[str, str]:
    """The Workflow's annotations that follow its membership and its RL figures: description and the columns'
    values. ``tasks``: (name, type, live replicas) in the job's order; ``training``: :func:`training_summary`'s
    sentence, kept in its own annotation too, so a rewrite for a new membership keeps the figures."""
    figures = {ANNOTATION_TRAINING_SUMMARY: training} if training else {}
    return {
        ANNOTATION_WORKFLOW_DESCRIPTION: describe(job_id, tasks, generation, training),
        ANNOTATION_REPLICAS: str(sum(count for _, _, count in tasks)),
        ANNOTATION_TASK_REPLICAS: task_summary(tasks),
        ANNOTATION_GENERATION: str(generation),
        **figures,
    }


def columns() -> list[dict[str, str]]:
    """Argo's ``columns``: one per :data:`UI_COLUMNS` entry, read from the Workflow's annotations."""
    return [{"name": name, "type": "annotation", "key": key} for name, key in UI_COLUMNS]


def links(server_url: str) -> list[dict[str, str]]:
    """Argo's ``links`` to the di-server at ``server_url`` (as the browser reaches it: ``http(s)://host[:port][/path]``).

    Raises ValueError naming the URL when it is not one."""
    if not _URL.match(server_url):
        raise ValueError(
            f"server_url: {server_url!r} is not an http(s) URL without query or fragment "
            "(e.g. http://127.0.0.1:8081 or https://dihera.example.com/di-server)"
        )
    base = server_url.rstrip("/")
    query = "&".join(f"{key}=${{workflow.metadata.labels.{label}}}" for key, label in _WORKFLOW_QUERY)
    workflow = WORKFLOW_LINK_PATH.format(namespace="${metadata.namespace}", name="${metadata.name}") + "?" + query
    pod = POD_VIEW_PATH.format(namespace="${metadata.namespace}", name=_JOB_OF_WORKFLOW, pod="${metadata.name}")
    trial = TRIAL_VIEW_PATH.format(namespace="${metadata.namespace}", pod="${metadata.name}")
    return [
        {"name": "DIJob or sweep (di-server)", "scope": "workflow", "url": base + workflow},
        {"name": "Replica (di-server)", "scope": "pod", "url": base + pod},
        {"name": "Trial DIJob (di-server)", "scope": "pod", "url": base + trial},
    ]


def argo_config(server_url: str) -> dict[str, list[dict[str, str]]]:
    """The ``columns`` and ``links`` entries of Argo's controller configuration (a ConfigMap key each,
    holding its YAML)."""
    return {"columns": columns(), "links": links(server_url)}


def configmap_data(server_url: str) -> dict[str, str]:
    """The ``data`` entries of ``workflow-controller-configmap``: ``columns`` and ``links``, each as YAML."""
    return {
        key: yaml.safe_dump(value, sort_keys=False, width=1 << 16) for key, value in argo_config(server_url).items()
    }


def helm_values(server_url: str) -> dict[str, object]:
    """The same for argo-helm's ``argo-workflows`` chart: its values ``controller.columns`` and ``controller.links``."""
    return {"controller": argo_config(server_url)}
