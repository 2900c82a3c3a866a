"""What a pass observed of a small job, for the decision tests: a DIJob ``job`` of one learner and two
collectors (ranks 0-2), its Workflow's nodes and pods, and :class:`Observed`, which builds the
:class:`~dihera.controller.decide.view.JobView` (and the hold) the decisions read."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dihera.constants import Phase
from dihera.controller.decide.hold import SuspendPlan
from dihera.controller.decide.status import StatusUpdate, compute_status
from dihera.controller.decide.view import JobView
from dihera.membership import Membership, Replica
from dihera.model import DIJob, FailurePolicy, SuccessPolicy, Task, TaskType
from tests.builders import PodBuilder, WorkflowBuilder, pod_node

T0, T1, T2 = "2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z", "2026-01-01T00:02:00Z"
JOB = "job"
#: learner-0 (rank 0), collector-0 (rank 1), collector-1 (rank 2)
MEMBERSHIP = Membership(1, (Replica(0, "learner", 0), Replica(1, "collector", 0), Replica(2, "collector", 1)))
REPLICAS = [("learner", 0), ("collector", 0), ("collector", 1)]


def pod(
    task: str,
    index: int,
    phase: str = "Running",
    ready: bool = True,
    attempt: int | None = None,
    code: int | None = None,
) -> dict[str, Any]:
    """The pod of a replica's attempt (None: a replica never retried), as the kubelet reports it, created at
    T0; ``code``: its main container exited with that code (the wait container with 0)."""
    built = PodBuilder(f"{JOB}-{task}-{index}-{attempt or 0}").replica(JOB, task, index, attempt).created(T0)
    built.phase(phase).ready(ready)
    if code is not None:
        built.terminated("wait", 0).terminated("main", code)
    return built.obj()


def workflow(
    phase: str = "Running", nodes: dict[str, Any] | None = None, message: str = "", retired: tuple[str, ...] = ()
) -> dict[str, Any]:
    """A Workflow whose entry DAG holds every replica of REPLICAS; ``retired`` DAG tasks are tombstones."""
    built = WorkflowBuilder(JOB).uid("wf").dag(REPLICAS, retired=retired)
    return built.phase(phase).nodes(nodes or {}).message(message).obj()


def running(*skip: tuple[str, int]) -> list[dict[str, Any]]:
    return [pod(t, i) for t, i in REPLICAS if (t, i) not in skip]


FAILED_ONCE = [pod("learner", 0), pod("collector", 0), pod("collector", 1, "Failed", False, attempt=0, code=3)]
RETRIED = [*FAILED_ONCE, pod("collector", 1, "Pending", False, attempt=1)]
RETRIED_UP = [*FAILED_ONCE, pod("collector", 1, attempt=1)]
ALWAYS_FAILS = [*FAILED_ONCE, pod("collector", 1, "Failed", False, attempt=1, code=3)]
#: collector-1 scaled away: generation 2 without it (the Workflow retires its DAG task)
SHRUNK = Membership(2, MEMBERSHIP.replicas[:2])
#: collector-2 added at rank 3: generation 2
GROWN = Membership(2, (*MEMBERSHIP.replicas, Replica(3, "collector", 2)))
RUNNING_1 = {"membershipGeneration": 1, "phase": "Running", "reschedules": 0}
RESCHEDULING_2 = {"membershipGeneration": 2, "phase": "Rescheduling", "reschedules": 1}
#: the retired replica's last attempt as Argo leaves it once its pod is deleted
RETIRED_NODES = {"r": pod_node(f"{JOB}.collector-1(0)", "Error", message="pod deleted")}


def dijob(
    membership: Membership = MEMBERSHIP,
    drop_tasks: Sequence[str] = (),
    types: Mapping[str, TaskType] | None = None,
    **settings: Any,
) -> DIJob:
    """The DIJob whose tasks are ``membership``'s (of ``types``; default: learner for the task named learner,
    collector for the others), with ``settings`` (backoff_limit, success_policy...)."""
    counts = membership.task_counts()
    tasks = tuple(
        Task(
            name,
            (types or {}).get(name, TaskType.LEARNER if name == "learner" else TaskType.COLLECTOR),
            count,
            {"spec": {"containers": [{"name": "main", "image": "i"}]}},
            failure_policy=FailurePolicy.DROP_REPLICA if name in drop_tasks else FailurePolicy.FAIL_JOB,
        )
        for name, count in counts.items()
    )
    return DIJob(name=JOB, namespace="ns", tasks=tasks, uid="job-uid", **settings)


@dataclass(frozen=True)
class Observed:
    """What a test says a pass observed (a job of ``membership``'s tasks; its Workflow and pods) and the
    job's settings; :meth:`view` is that as the decisions read it, with the status ``old``."""

    workflow: dict[str, Any] | None
    pods: Sequence[dict[str, Any]]
    backoff_limit: int = 3
    membership: Membership | None = MEMBERSHIP
    invalid: str | None = None
    foreign_workflow: bool = False
    scale_refused: str | None = None
    success_policy: SuccessPolicy | None = None
    active_deadline_seconds: int | None = None
    drop_tasks: frozenset[str] = frozenset()
    min_replicas: int | None = None
    #: the held phase's message (spec.suspend or Kueue), its phase and its Event reason
    suspended: str | None = None
    held_phase: Phase = Phase.SUSPENDED
    held_cause: str | None = None
    generation: int = 1
    #: the DIJob's annotations; task name → type where not the default (learner: learner, others: collector)
    annotations: tuple[tuple[str, str], ...] = ()
    types: tuple[tuple[str, TaskType], ...] = ()

    def job(self) -> DIJob | None:
        if self.invalid is not None:
            return None
        settings = {
            "backoff_limit": self.backoff_limit,
            "success_policy": self.success_policy,
            "active_deadline_seconds": self.active_deadline_seconds,
            "min_replicas": self.min_replicas,
            "annotations": dict(self.annotations),
        }
        return dijob(self.membership or MEMBERSHIP, tuple(self.drop_tasks), dict(self.types), **settings)

    def view(self, old: dict[str, Any] | None = None) -> JobView:
        meta = {"name": JOB, "namespace": "ns", "uid": "job-uid", "generation": self.generation}
        body: dict[str, Any] = {"metadata": meta, "spec": {}}
        if old:
            body["status"] = dict(old)
        return JobView(
            body,
            self.job(),
            invalid=self.invalid,
            membership=self.membership,
            workflow=self.workflow,
            foreign=self.foreign_workflow,
            pods=tuple(self.pods),
        )

    def hold(self) -> SuspendPlan:
        return SuspendPlan(message=self.suspended, phase=self.held_phase, cause=self.held_cause)


def observe(
    wf: dict[str, Any] | None,
    pods: Sequence[dict[str, Any]],
    backoff: int = 3,
    membership: Membership | None = MEMBERSHIP,
    **kw: Any,
) -> Observed:
    return Observed(wf, pods, backoff, membership, **kw)


def status_after(obs: Observed, old: dict[str, Any] | None, now: str) -> StatusUpdate:
    """The status a pass decides for ``obs`` over the status ``old``, at ``now``."""
    return compute_status(obs.view(old), obs.hold(), now, obs.scale_refused)
