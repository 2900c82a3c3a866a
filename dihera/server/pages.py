"""The read-only views as small HTML pages, for a browser following an Argo UI link (pure).

Every value is escaped; the pages load nothing (no script, style sheet or image: a job's learning curve is
inline SVG).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from html import escape

from dihera.rl.curve import learning_curve_svg
from dihera.server.models import ExperimentView, JobView, PodView, ReplicaOut

__all__ = ["experiment_page", "job_page", "pod_page"]

_REPLICA_HEAD = ("replica", "rank", "pod", "phase", "fqdn")


class _Link:
    """A table cell that links (its ``href`` and text are escaped like any other value)."""

    def __init__(self, href: str, text: str) -> None:
        self.href, self.text = href, text

    def html(self) -> str:
        return f'<a href="{escape(self.href)}">{escape(self.text)}</a>'


def _cell(value: object) -> str:
    return value.html() if isinstance(value, _Link) else escape(_text(value))


def _table(head: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    cells = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{_cell(v)}</td>" for v in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{cells}</tr></thead><tbody>{body}</tbody></table>"


def _text(value: object) -> str:
    return "-" if value is None else str(value)


def _page(title: str, body: str) -> str:
    return (
        f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{escape(title)}</title></head>'
        f"<body><h1>{escape(title)}</h1>{body}</body></html>"
    )


def _replica_row(r: ReplicaOut) -> tuple[object, ...]:
    return (r.name, r.rank, r.pod, r.phase, r.fqdn)


def _checkpoint_text(checkpoint: dict[str, object] | None) -> str | None:
    if checkpoint is None:
        return None
    how = " on SIGTERM" if checkpoint.get("onTerm") else ""
    return (
        f"iteration {checkpoint.get('iteration')} by {checkpoint.get('replica')}{how} at {checkpoint.get('time')}: "
        f"{checkpoint.get('path')}"
    )


def job_page(view: JobView) -> str:
    """The job's facts, its tasks with their progress, and its replicas."""
    job = view.job
    facts = [
        ("phase", job.phase),
        ("replicas", job.replicas),
        ("membership generation", job.membershipGeneration),
        ("progress", view.progress),
        ("last checkpoint", _checkpoint_text(view.checkpoint)),
    ]
    tasks = [(t.name, t.type, t.replicas, t.specReplicas, view.taskProgress.get(t.name)) for t in job.tasks]
    return _page(
        f"DIJob {job.namespace}/{job.name}",
        _table(("", ""), facts)
        + _training(view, f"{job.namespace}/{job.name}")
        + "<h2>Tasks</h2>"
        + _table(("task", "type", "replicas", "spec replicas", "progress"), tasks)
        + "<h2>Replicas</h2>"
        + _table(_REPLICA_HEAD, (_replica_row(r) for r in view.replicas)),
    )


def _training(view: JobView, job: str) -> str:
    """The RL figures and the learning curve, drawn inline (nothing loaded): when the replicas reported any."""
    training = view.training
    if not training:
        return ""
    evaluation = training.get("evaluation") or {}
    lag = training.get("policyLag") or {}
    facts = [
        ("return (newest, best)", f"{evaluation.get('value', '-')}, {evaluation.get('best', '-')}"),
        ("learner iteration", training.get("iteration")),
        ("env steps/s", training.get("envStepsPerSecond")),
        ("iterations/s", training.get("iterationsPerSecond")),
        ("data-wait fraction", training.get("dataWaitFraction")),
        ("policy lag (p50, max)", f"{lag.get('p50', '-')}, {lag.get('max', '-')}" if lag else None),
        ("not finite", ", ".join(training.get("nonFinite") or []) or None),
        ("curve", _Link(f"{view.job.name}/curve.svg", "SVG")),
    ]
    return "<h2>Training</h2>" + _table(("", ""), facts) + learning_curve_svg(training, job)


def pod_page(view: PodView) -> str:
    """The pod and the replica it ran (or that it left the job)."""
    if view.replica is None:
        replica = "<p>This pod's replica is no longer part of the job (scaled down or dropped).</p>"
    else:
        attempt = "" if view.current else "<p>An earlier attempt: the replica runs a newer pod.</p>"
        replica = _table(_REPLICA_HEAD, [_replica_row(view.replica)]) + attempt
    facts = [("job", f"{view.namespace}/{view.job}"), ("pod phase", view.podPhase)]
    return _page(f"Pod {view.pod}", _table(("", ""), facts) + "<h2>Replica</h2>" + replica)


def _progress(view: ExperimentView) -> str:
    c = view.counts
    created = sum(c.values())
    waiting = "" if view.trials is None else f", {max(0, view.trials - created)} waiting"
    total = "" if view.trials is None else f" of {view.trials}"
    return f"{c['done']} done, {c['running']} running, {c['failed']} failed, {c['stopped']} stopped{waiting}{total}"


def experiment_page(view: ExperimentView) -> str:
    """The sweep's progress, its best configuration so far and its trials, each linking to its DIJob's view."""
    names = list(view.rows[0].values) if view.rows else []
    best = "none yet" if view.best is None else json.dumps(view.best["values"], sort_keys=True)
    mean = None if view.best is None else f"{view.best['mean']:.4g}"
    facts = [("trials", _progress(view)), ("ranked by", f"{view.metric} ({view.goal})"), ("best", best), ("mean", mean)]
    rows = [
        (r.index, *(r.values.get(n) for n in names), r.seed, r.phase, r.metric, _Link(f"../dijobs/{r.job}", r.job))
        for r in view.rows
    ]
    return _page(
        f"Sweep {view.namespace}/{view.name}",
        _table(("", ""), facts)
        + "<h2>Trials</h2>"
        + _table(("trial", *names, "seed", "phase", view.metric, "DIJob"), rows),
    )
