"""Submit a DIJob from Python and optionally wait for a phase.

from dihera.kube import api_client
from dihera.submit import submit
status = submit(load_job(manifest), api=api_client(), wait="Succeeded", timeout=600)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from kubernetes import client

from dihera.kube.jobs import JobStore
from dihera.model import DIJob
from dihera.shapes.dijob import DIJobObject, as_status
from dihera.validation import load_job

__all__ = ["format_progress", "submit"]


def format_progress(status: Mapping[str, object]) -> str:
    """One line: ``Running  ready 3/4  collector Running=2  learner Succeeded=1``."""
    phase = status.get("phase") or "(no status yet)"
    parts = [f"{phase:<12}", f"ready {status.get('readyReplicas', 0)}/{status.get('replicas', 0)}"]
    for task, phases in sorted((as_status(status).get("taskStatus") or {}).items()):
        parts.append(f"{task} " + ",".join(f"{p}={n}" for p, n in sorted(phases.items())))
    if status.get("restarts"):
        parts.append(f"restarts {status['restarts']}")
    return "  ".join(parts)


def submit(
    job: DIJob | Mapping[str, object],
    *,
    api: client.ApiClient,
    namespace: str | None = None,
    wait: str | None = None,
    timeout: float = 600.0,
    progress: Callable[[Mapping[str, object]], None] | None = None,
) -> DIJobObject | dict[str, object]:
    """Create the DIJob through the Kubernetes API; with ``wait``, block until that phase.

    A manifest is validated first (:class:`~dihera.errors.InvalidJobError` lists every problem).
    Returns the created object, or with ``wait`` the status reached. Raises ``RuntimeError`` if
    the job ends in another terminal phase and :class:`~dihera.kube.jobs.WaitTimeout` on timeout.
    """
    typed = job if isinstance(job, DIJob) else load_job(job, namespace=namespace)
    manifest = typed.to_manifest()
    if namespace:
        manifest["metadata"]["namespace"] = namespace
    store = JobStore(api)
    created = store.create(manifest)
    if wait is None:
        return created
    meta = created["metadata"]
    return store.wait_for_phase(meta["namespace"], meta["name"], wait, timeout, progress)
