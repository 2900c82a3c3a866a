"""What scaling a running job needs of the cluster, as small Protocols (no I/O here).

The use case (:mod:`dihera.scaling.executor`) is written against these; :mod:`dihera.kube.scale_executor`
implements them with one API call each, and the unit tests with objects in memory. Objects travel as the
API's JSON (camelCase dicts).

Errors, the same for every write: a write carries the resourceVersion it was computed from, and one that lost
that race raises :class:`WriteConflict` (HTTP 409: the use case reads again and recomputes); a write whose
object went away raises :class:`dihera.errors.ScaleNotFound` (404); any other failure is raised as it is.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from typing import Protocol

from dihera.model import DIJob
from dihera.patches import PatchOp
from dihera.shapes.configmap import ConfigMap
from dihera.shapes.dijob import DIJobObject
from dihera.shapes.pod import Pod
from dihera.shapes.workflow import Workflow

__all__ = [
    "JobObjects",
    "MembershipStore",
    "Quota",
    "QuotaReleaseFailed",
    "RetirementStore",
    "WorkflowStore",
    "WriteConflict",
]


class WriteConflict(Exception):
    """A write lost a resourceVersion race: read again and recompute."""


class QuotaReleaseFailed(Exception):
    """Giving a queued job's quota back failed (the scale stands; the quota is released when the job ends)."""


class JobObjects(Protocol):
    """The DIJob: read, and patched (``spec.tasks[].replicas`` and the stamp)."""

    def get_job(self, namespace: str, name: str) -> DIJobObject | None:
        """The DIJob as the API server has it now; None when there is none."""
        ...

    def patch_job(self, namespace: str, name: str, ops: Sequence[PatchOp]) -> None:
        """Apply the JSON patch ``ops`` (its first operation the resourceVersion precondition)."""
        ...


class MembershipStore(Protocol):
    """The job's membership ConfigMap (``di-<job>``): the commitment of every scale."""

    def get_configmap(self, namespace: str, name: str) -> ConfigMap | None:
        """The ConfigMap as the API server has it now; None when there is none."""
        ...

    def replace_configmap(self, namespace: str, configmap: ConfigMap) -> None:
        """Replace the ConfigMap named in ``configmap``'s metadata, guarded by its ``resourceVersion``."""
        ...


class WorkflowStore(Protocol):
    """The job's Argo Workflow: read, and its DAG converged to the membership."""

    def get_workflow(self, namespace: str, name: str) -> Workflow | None:
        """The Workflow as the API server has it now; None when there is none."""
        ...

    def patch_workflow(self, namespace: str, name: str, ops: Sequence[PatchOp]) -> Workflow:
        """Apply the JSON patch ``ops`` (its first operation the resourceVersion precondition); the Workflow
        as the write left it."""
        ...


class RetirementStore(Protocol):
    """What deleting retired replicas' pods needs: the job's pods, and a bounded watch of its Workflow."""

    def list_pods(self, namespace: str, selector: str) -> list[Pod]:
        """The pods matching a label selector."""
        ...

    def watch_workflow(
        self, namespace: str, name: str, after: str, seconds: float
    ) -> Generator[dict[str, object], None, None]:
        """The Workflow as each write after resourceVersion ``after`` leaves it, for up to ``seconds``; it ends
        when the time is up or the Workflow is deleted (closed by the caller when it stops reading)."""
        ...

    def delete_pods(self, namespace: str, names: Sequence[str], uids: Mapping[str, str] | None = None) -> None:
        """Delete the pods ``names``, each only under the uid ``uids`` gives it (one created again under the
        name meanwhile is kept)."""
        ...


class Quota(Protocol):
    """A queued job's quota (Kueue's): asked for before a scale-up commits, given back after a scale-down."""

    def admit(self, job: DIJob, before: Mapping[str, int], after: Mapping[str, int], generation: int) -> None:
        """Return once the replicas ``after`` adds to ``before`` (task → replicas) are admitted; raise
        :class:`dihera.errors.QuotaRefused` when they are not (nothing is committed then)."""
        ...

    def release(self, job: DIJob, needed: Mapping[str, int]) -> None:
        """Give back the quota the job no longer needs after a scale-down to ``needed``; raise
        :class:`QuotaReleaseFailed` when the cluster refused (best effort: the scale stands)."""
        ...
