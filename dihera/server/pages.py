"""The read-only views as small HTML pages, for a browser following an Argo UI link (pure).

Every value is escaped; the pages load nothing (no script, style sheet or image).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape

from dihera.server.models import JobView, PodView, ReplicaOut

__all__ = ["job_page", "pod_page"]

_REPLICA_HEAD = ("replica", "rank", "pod", "phase", "fqdn")


def _table(head: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    cells = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{escape(_text(v))}</td>" for v in row) + "</tr>" for row in rows)
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


def job_page(view: JobView) -> str:
    """The job's facts, its tasks with their progress, and its replicas."""
    job = view.job
    facts = [
        ("phase", job.phase),
        ("replicas", job.replicas),
        ("membership generation", job.membershipGeneration),
        ("progress", view.progress),
    ]
    tasks = [(t.name, t.type, t.replicas, t.specReplicas, view.taskProgress.get(t.name)) for t in job.tasks]
    return _page(
        f"DIJob {job.namespace}/{job.name}",
        _table(("", ""), facts)
        + "<h2>Tasks</h2>"
        + _table(("task", "type", "replicas", "spec replicas", "progress"), tasks)
        + "<h2>Replicas</h2>"
        + _table(_REPLICA_HEAD, (_replica_row(r) for r in view.replicas)),
    )


def pod_page(view: PodView) -> str:
    """The pod and the replica it ran (or that it left the job)."""
    if view.replica is None:
        replica = "<p>This pod's replica is no longer part of the job (scaled down or dropped).</p>"
    else:
        attempt = "" if view.current else "<p>An earlier attempt: the replica runs a newer pod.</p>"
        replica = _table(_REPLICA_HEAD, [_replica_row(view.replica)]) + attempt
    facts = [("job", f"{view.namespace}/{view.job}"), ("pod phase", view.podPhase)]
    return _page(f"Pod {view.pod}", _table(("", ""), facts) + "<h2>Replica</h2>" + replica)
