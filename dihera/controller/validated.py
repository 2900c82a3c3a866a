"""The typed jobs of the last DIJobs a pass validated, so the next pass of an unchanged job does not
validate it again (no I/O).

A pass reads a DIJob from the cache and validates it against the schema before deciding (``load_job``):
in a burst that was one pass in sixteen of the controller's CPU, for a spec that had not changed since
the last pass. What validation reads is the spec (its ``metadata.generation`` changes with it), the
name, namespace, uid, labels and annotations, and whether the job was taken up (``status.phase``), so a
job loaded from the same of those is the same job. Jobs are frozen and rendering copies what it takes
from them, so one can serve several passes.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable

from dihera.model import DIJob
from dihera.shapes.dijob import DIJobObject
from dihera.validation import load_job

__all__ = ["KEPT", "ValidatedJobs"]

#: Jobs kept (the most recently used): a burst's jobs, not all of a large controller's.
KEPT = 64


def _key(body: DIJobObject) -> Hashable | None:
    meta = body.get("metadata") or {}
    uid, generation = meta.get("uid"), meta.get("generation")
    if not uid or generation is None:
        return None
    return (
        uid,
        generation,
        meta.get("name"),
        meta.get("namespace"),
        bool((body.get("status") or {}).get("phase")),
        tuple(sorted((meta.get("labels") or {}).items())),
        tuple(sorted((meta.get("annotations") or {}).items())),
    )


class ValidatedJobs:
    """``load_job`` with the last :data:`KEPT` answers remembered (thread-safe; invalid jobs are not)."""

    def __init__(self, kept: int = KEPT) -> None:
        self._kept = kept
        self._jobs: OrderedDict[Hashable, DIJob] = OrderedDict()
        self._lock = threading.Lock()

    def load(self, body: DIJobObject) -> DIJob:
        """The job of ``body``; raises :class:`~dihera.errors.InvalidJobError` as ``load_job`` does."""
        key = _key(body)
        if key is not None:
            with self._lock:
                job = self._jobs.get(key)
                if job is not None:
                    self._jobs.move_to_end(key)
                    return job
        job = load_job(body)
        if key is not None:
            with self._lock:
                self._jobs[key] = job
                while len(self._jobs) > self._kept:
                    self._jobs.popitem(last=False)
        return job
