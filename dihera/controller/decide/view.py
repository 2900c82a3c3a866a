"""What one reconcile observed of a job (pure data): the one thing every decision reads.

:mod:`dihera.controller.observe` builds a :class:`JobView` from the watch cache (or the API server);
:func:`dihera.controller.decide.converge.plan_converge` and
:func:`dihera.controller.decide.status.compute_status` decide from it; after the pass creates or scales
the job's objects it observes again into a new view. Nothing here is copied into other records: a
decision that needs a fact reads it here, or derives it from what is here.

Two of its fields are records of their own: :class:`~dihera.queueing.workload.QueueState`, Kueue's answer
(read where the Workload's status is read, :func:`dihera.queueing.workload.queue_state`;
:mod:`~dihera.controller.decide.hold` decides from it), and :class:`Conflict`, kept here with the view (which
sits below every decision, so it names nothing above it), an object under one of the job's names that the
DIJob does not own (:mod:`~dihera.controller.decide.ownership` finds it).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cached_property

from dihera.constants import TERMINAL_PHASES
from dihera.membership import Membership
from dihera.model import DIJob
from dihera.queueing import QueueState
from dihera.shapes.configmap import ConfigMap
from dihera.shapes.dijob import DIJobObject, DIJobStatus
from dihera.shapes.pod import Pod
from dihera.shapes.service import Service
from dihera.shapes.workflow import Workflow

__all__ = ["Conflict", "JobView", "QueueState"]


@dataclass(frozen=True)
class JobView:
    """One job as a pass saw it.

    ``job``: the DIJob validated (None: invalid, ``invalid`` says why). ``configmap``: its membership
    ConfigMap, ``membership`` what it holds (None: not created yet). ``workflow``: the Workflow named after
    the job, if any; it is ``foreign`` when another (deleted) DIJob owns it; ``copies``: other Workflows
    labelled with the job and owned by the DIJob (an Argo RESUBMIT's: it keeps the ownerReferences).
    ``service``: its headless Service (None: none).
    ``pods``: the pods of the job's own Workflow.
    ``queue``: Kueue's answer (None: the job is not queued). ``leftover_pods``: pods of a held run still
    going away, counted (by the API server) only when a resume or a quota release waits on them.
    ``conflicts``: objects under the job's names that the DIJob does not own (left untouched; its Service,
    ConfigMap or Workflow field is then None, but for a deleted DIJob's Workflow: ``foreign``).
    ``cached``: read from the watch cache (it may be behind the API server). ``scaled``: the scaler ran in
    this pass (the pods of replicas it retired may be gone already, though the cache still shows them).
    """

    body: DIJobObject
    job: DIJob | None
    invalid: str | None = None
    membership: Membership | None = None
    workflow: Workflow | None = None
    foreign: bool = False
    pods: tuple[Pod, ...] = ()
    configmap: ConfigMap | None = None
    service: Service | None = None
    copies: tuple[Workflow, ...] = ()
    queue: QueueState | None = None
    leftover_pods: int = 0
    cached: bool = True
    scaled: bool = False
    conflicts: tuple[Conflict, ...] = ()

    def conflicting(self, kind: str) -> bool:
        """Whether the job's object of ``kind`` is in conflict (another object holds its name)."""
        return any(c.kind == kind for c in self.conflicts)

    def with_conflicts(self, *found: Conflict) -> JobView:
        """This view with ``found`` added (one conflict per kind: the first found is kept)."""
        conflicts = list(self.conflicts)
        for c in found:
            if all(c.kind != old.kind for old in conflicts):
                conflicts.append(c)
        return dataclasses.replace(self, conflicts=tuple(conflicts)) if len(conflicts) > len(self.conflicts) else self

    @property
    def namespace(self) -> str:
        return str(self.body["metadata"]["namespace"])

    @property
    def name(self) -> str:
        return str(self.body["metadata"]["name"])

    @property
    def key(self) -> str:
        """``namespace/name``, as logs name the job."""
        return f"{self.namespace}/{self.name}"

    @cached_property
    def status(self) -> DIJobStatus:
        """The status as read (the one this pass may replace)."""
        return (self.body.get("status") or {}).copy()

    @property
    def phase(self) -> str | None:
        """The phase as read (None: the job has no status yet)."""
        return self.status.get("phase")

    @property
    def generation(self) -> int:
        return int(self.body["metadata"].get("generation") or 0)

    @property
    def started(self) -> bool:
        """Whether the job's objects were created once (the status names its Workflow)."""
        return bool(self.status.get("workflowName"))

    @property
    def finished(self) -> bool:
        return self.phase in TERMINAL_PHASES

    @property
    def ours(self) -> Workflow | None:
        """The Workflow if it is this job's (not a deleted DIJob's of the same name)."""
        return None if self.foreign else self.workflow


@dataclass(frozen=True)
class Conflict:
    """An object named as one of the job's that the job does not own. ``owner``: who owns it, as a reader
    reads it (``Deployment web (uid 1234)``, ``no owner``); ``leftover``: a previous same-named DIJob's object
    being garbage-collected."""

    kind: str
    name: str
    owner: str
    leftover: bool = False

    @property
    def message(self) -> str:
        if self.leftover:
            return (
                f"the {self.kind} {self.name} is a leftover of a deleted DIJob of the same name ({self.owner}), "
                "being garbage-collected: the job waits for it to go and tries again"
            )
        return (
            f"a {self.kind} {self.name} that this DIJob does not own exists ({self.owner}): it is left untouched; "
            f"delete or rename it (or the DIJob) and the job goes on"
        )
