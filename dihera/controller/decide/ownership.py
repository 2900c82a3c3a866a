"""Whether an object found under a name the job needs is the job's (pure): the controller never adopts,
overwrites or deletes an object its DIJob does not own.

Every object a DIJob's pass creates has a name fixed by the job's (``di-<job>`` for the headless Service and
the membership ConfigMap, ``<job>`` for the Workflow): someone can create an object of that name first, and
a deleted DIJob's objects keep their names until the garbage collector deletes them. An object is the job's
only when an ownerReference with the DIJob's ``uid`` and ``controller: true`` names it. Anything else under
the name is a :class:`Conflict`: left untouched, named in a Warning Event and in the Pending condition
(reason ``ObjectConflict``), and looked at again on a backoff (:func:`retry_after`); once the name is
free the job goes on (docs/controller.md, "Objects the job does not own").

A conflict whose object carries the job's labels and is owned by a DIJob of the same name with another
uid (or is being deleted) is a *leftover*: a previous DIJob's object the garbage collector is deleting,
which frees the name by itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from dihera.constants import LABEL_JOB, LABEL_MANAGED_BY, MANAGED_BY
from dihera.controller.decide.deadline import parse_time
from dihera.controller.decide.view import Conflict
from dihera.objects import labels, metadata
from dihera.schema import KIND
from dihera.shapes.meta import OwnerReference

__all__ = ["CONFLICT_RETRY_MAX", "CONFLICT_RETRY_MIN", "Conflict", "conflict", "describe", "owns", "retry_after"]

#: Seconds before a pass looks at a conflict again, at least and at most: the wait is how long the job has
#: been Pending, within these bounds, so the passes of a permanent conflict space out (5, 5, 10, 20... 300 s)
#: and a leftover the garbage collector deletes in a second costs a few seconds.
CONFLICT_RETRY_MIN = 5.0
CONFLICT_RETRY_MAX = 300.0


def owns(obj: Mapping[str, object], uid: str | None) -> bool:
    """Whether ``obj`` has the controlling ownerReference to the DIJob ``uid``."""
    refs = metadata(obj).get("ownerReferences") or []
    return uid is not None and any(r.get("uid") == uid and r.get("controller") is True for r in refs)


def _owner(refs: Sequence[OwnerReference]) -> str:
    if not refs:
        return "no owner"
    return ", ".join(f"owned by {r.get('kind')} {r.get('name')} (uid {r.get('uid')})" for r in refs)


def _leftover(obj: Mapping[str, object], job: str) -> bool:
    """The job's labels, and owned by another DIJob of the job's name or already being deleted."""
    found = labels(obj)
    if found.get(LABEL_JOB) != job or found.get(LABEL_MANAGED_BY) != MANAGED_BY[LABEL_MANAGED_BY]:
        return False
    refs = metadata(obj).get("ownerReferences") or []
    same_name = any(r.get("kind") == KIND and r.get("name") == job for r in refs)
    return same_name or bool(metadata(obj).get("deletionTimestamp"))


def conflict(kind: str, obj: Mapping[str, object], job: str, uid: str | None) -> Conflict | None:
    """The conflict ``obj``, a ``kind`` found under one of job ``job``'s names, is; None when the DIJob ``uid``
    owns it. (``kind`` is given: the watch cache's slim copies do not keep it.)"""
    if owns(obj, uid):
        return None
    meta = metadata(obj)
    return Conflict(kind, str(meta.get("name")), _owner(meta.get("ownerReferences") or []), _leftover(obj, job))


def describe(conflicts: Sequence[Conflict]) -> str:
    """The Pending condition's message: every conflict, in the order found."""
    return "; ".join(c.message for c in conflicts)


def retry_after(since: str | None, now: str) -> float:
    """Seconds until a job held by a conflict since ``since`` (RFC 3339; None: now) is reconciled again:
    the time it has waited so far, within :data:`CONFLICT_RETRY_MIN` and :data:`CONFLICT_RETRY_MAX`."""
    waited = (parse_time(now) - parse_time(since)).total_seconds() if since else 0.0
    return min(max(waited, CONFLICT_RETRY_MIN), CONFLICT_RETRY_MAX)
