"""What each replica of a job is doing, read from the Workflow's nodes and the pods (pure).

A replica is one DAG node ``<task>-<index>``. With a retryStrategy Argo makes it a ``Retry`` node
whose children are the attempts ``<wf>.<task>-<index>(k)``; each attempt is one pod, labelled with
the replica's hostname (``diengine/pod``) and annotated with its node name. The *current* attempt is
the highest one seen in either source, so a replica's counts never mix attempts.

A replica removed by scaling keeps its DAG task as a tombstone whose template is ``dihera-retired``
(see :mod:`dihera.scaling`): it is no longer a replica of the job, so it is left out even if the
membership read with it is older than the Workflow; its deleted pod is neither a failure nor a restart.
"""

from __future__ import annotations

import functools
import operator
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import NamedTuple, TypedDict

from dihera.constants import ANNOTATION_ARTIFACT_COLLECTOR, ANNOTATION_NODE_NAME, LABEL_POD
from dihera.controller.decide.stuck import pod_problem
from dihera.membership import Membership, Replica
from dihera.naming import dag_task_name, hostname
from dihera.objects import FAILED_NODE_PHASES, PodPhase, VersionMemo, labels, metadata
from dihera.scaling.dag import live_replicas, workflow_nodes
from dihera.shapes.pod import ContainerStatus, Pod
from dihera.shapes.workflow import Workflow, as_nodes

__all__ = [
    "NODE_NAME_ANNOTATION",
    "ReplicaState",
    "attempt_of",
    "exit_code",
    "failure_reason",
    "replica_states",
    "workflow_nodes",
]

NODE_NAME_ANNOTATION = ANNOTATION_NODE_NAME
_ATTEMPT = re.compile(r"\((\d+)\)$")
_ARGO_CONTAINERS = frozenset({"wait", "init"})


def _user_statuses(pod: Pod) -> list[ContainerStatus]:
    """The statuses of the user's containers: not Argo's own, nor the one dihera added to collect artifacts."""
    collector = metadata(pod).get("annotations", {}).get(ANNOTATION_ARTIFACT_COLLECTOR)
    return [
        cs
        for cs in (pod.get("status") or {}).get("containerStatuses") or []
        if cs.get("name") not in _ARGO_CONTAINERS and cs.get("name") != collector
    ]


@dataclass(frozen=True)
class ReplicaState:
    """One replica's current attempt. ``pod_phase`` is None while its pod does not exist yet."""

    task: str
    index: int
    rank: int
    hostname: str
    attempt: int
    pod_name: str | None = None
    pod_phase: str | None = None
    ready: bool = False
    exit_code: int | None = None
    failed: bool = False
    node_message: str | None = None
    #: Exit code of the latest failed attempt still visible (a restarted replica's last failure).
    last_failure_code: int | None = None
    #: ``(reason, message)`` when the current pod is stuck (:mod:`dihera.controller.stuck`), else None.
    problem: tuple[str, str] | None = None
    #: Why the kubelet failed the pod whose exit code is reported (``Evicted: Usage of EmptyDir volume ...``),
    #: when its status says (:func:`failure_reason`), else None.
    failure_reason: str | None = None
    #: Every user container exited 0 (the pod may still be Running while Argo's wait container finishes).
    finished: bool = False
    #: The current attempt's node progress ``N/M`` as Argo keeps it (self-reported, or its default).
    progress: str | None = None
    #: When the current pod's user containers had all ended (the latest ``finishedAt``), else None.
    ended_at: str | None = None

    @functools.cached_property
    def name(self) -> str:
        """``<task>-<index>``, how messages name the replica."""
        return dag_task_name(self.task, self.index)

    @property
    def up(self) -> bool:
        """Running and ready, or done: what the Running phase needs of every replica. A replica whose
        containers all exited 0 is done even before its pod is Succeeded (no flap back to Starting)."""
        running = self.pod_phase == PodPhase.RUNNING and (self.ready or self.finished)
        return running or self.pod_phase == PodPhase.SUCCEEDED


def attempt_of(node_name: str) -> int:
    """The retry attempt in an Argo node name: ``job.collector-1(2)`` → 2; no suffix → 0."""
    match = _ATTEMPT.search(node_name)
    return int(match.group(1)) if match else 0


def exit_code(pod: Pod) -> int | None:
    """The first non-zero exit code of the user's containers (Argo's own are skipped), else 0 or None."""
    codes = []
    for cs in _user_statuses(pod):
        term = (cs.get("state") or {}).get("terminated")
        if term is not None and term.get("exitCode") is not None:
            codes.append(int(term["exitCode"]))
    nonzero = [c for c in codes if c != 0]
    return nonzero[0] if nonzero else (0 if codes else None)


def finished_ok(pod: Pod) -> bool:
    """Every user container (Argo's own skipped) has terminated with exit code 0."""
    statuses = _user_statuses(pod)
    return bool(statuses) and all(
        ((cs.get("state") or {}).get("terminated") or {}).get("exitCode") == 0 for cs in statuses
    )


#: How much of the kubelet's message a failure description keeps.
_REASON_CHARS = 200


def failure_reason(pod: Pod) -> str | None:
    """``<reason>: <message>`` of a Failed pod whose status names a reason (the kubelet's: ``Evicted`` for
    memory, disk or an emptyDir over its sizeLimit, ``DeadlineExceeded``, ``UnexpectedAdmissionError`` ...;
    these pods' containers are removed, so their logs are gone), else None."""
    status = pod.get("status") or {}
    reason = status.get("reason")
    if status.get("phase") != PodPhase.FAILED or not reason:
        return None
    message = " ".join(str(status.get("message") or "").split())
    text = f"{reason}: {message}" if message else str(reason)
    return text if len(text) <= _REASON_CHARS else text[: _REASON_CHARS - 3] + "..."


def ended_at(pod: Pod) -> str | None:
    """When every user container (Argo's own skipped) had terminated: the latest ``finishedAt``; else None."""
    ends = []
    for cs in _user_statuses(pod):
        terminated = (cs.get("state") or {}).get("terminated")
        if terminated is None or not terminated.get("finishedAt"):
            return None
        ends.append(str(terminated["finishedAt"]))
    return max(ends) if ends else None


def _ready(pod: Pod) -> bool:
    conds = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)


def _pod_attempt(pod: Pod) -> int:
    return attempt_of(metadata(pod).get("annotations", {}).get(NODE_NAME_ANNOTATION, ""))


@dataclass(frozen=True, slots=True)
class PodFacts:
    """What :func:`replica_states` reads of one pod, worked out once per version of the pod (the pod
    itself is not kept: remembered facts hold no old copy of a pod alive)."""

    name: str
    attempt: int
    phase: str | None
    #: ``(not being deleted, creationTimestamp)``: of a replica's pods of one attempt, the greatest is current.
    order: tuple[bool, str]
    ready: bool
    exit_code: int | None
    finished: bool
    problem: tuple[str, str] | None
    ended_at: str | None
    failure_reason: str | None


def _facts(pod: Pod) -> PodFacts:
    meta = metadata(pod)
    return PodFacts(
        name=str(meta.get("name") or ""),
        attempt=_pod_attempt(pod),
        phase=(pod.get("status") or {}).get("phase"),
        order=(meta.get("deletionTimestamp") is None, meta.get("creationTimestamp", "")),
        ready=_ready(pod),
        exit_code=exit_code(pod),
        finished=finished_ok(pod),
        problem=pod_problem(pod),
        ended_at=ended_at(pod),
        failure_reason=failure_reason(pod),
    )


#: A pod's facts per version: a pass over a big job works out only the pods that changed (a few MiB).
pod_facts: VersionMemo[PodFacts] = VersionMemo(_facts, kept=20_000)


class NodeFacts(NamedTuple):
    """What :func:`replica_states` reads of one attempt's node (compared by value between passes)."""

    phase: str | None
    message: str | None
    progress: str | None


#: A replica's attempt nodes: attempt number → its node's facts.
AttemptNodes = Mapping[int, NodeFacts]
_NO_NODES: AttemptNodes = MappingProxyType({})


def _read_attempt_nodes(workflow: Workflow) -> dict[str, AttemptNodes]:
    nodes = as_nodes(workflow_nodes(workflow))
    prefix = f"{workflow['metadata']['name']}."
    out: dict[str, dict[int, NodeFacts]] = {}
    for node in nodes.values():
        name = str(node.get("name", ""))
        if node.get("type") != "Pod" or not name.startswith(prefix):
            continue
        attempt = _ATTEMPT.search(name)
        replica = name[len(prefix) : attempt.start()] if attempt else name[len(prefix) :]
        facts = NodeFacts(node.get("phase"), node.get("message") or None, node.get("progress") or None)
        out.setdefault(replica, {})[int(attempt.group(1)) if attempt else 0] = facts
    return dict(out)


#: A Workflow's replicas' attempt nodes per version: passes between two versions of the Workflow (most passes
#: of a big job: its pods change far more often) do not read its nodes again.
_attempt_nodes_of: VersionMemo[dict[str, AttemptNodes]] = VersionMemo(_read_attempt_nodes, kept=64)


def _attempt_nodes(workflow: Workflow | None) -> Mapping[str, AttemptNodes]:
    """Every replica's attempt nodes, by its DAG name and attempt number (a non-retried replica's one
    node is attempt 0): one pass over the Workflow's nodes, not one per replica; once per version."""
    return _attempt_nodes_of(workflow) if workflow else {}


def _by_hostname(pods: Iterable[Pod]) -> dict[str, list[PodFacts]]:
    out: dict[str, list[PodFacts]] = {}
    for pod in pods:
        host = labels(pod).get(LABEL_POD)
        if host:
            out.setdefault(host, []).append(pod_facts(pod))
    return out


def _problem(pod: PodFacts | None, last_failed: PodFacts | None) -> tuple[str, str] | None:
    """The current pod's problem; while its retry is not running yet, the last failed attempt's
    (an OOMKilled attempt stays named until the next one runs, however fast Argo retries)."""
    found = pod.problem if pod is not None else None
    pending = pod is None or pod.phase in (None, PodPhase.PENDING)
    if found is None and pending and last_failed is not None and last_failed is not pod:
        return last_failed.problem
    return found


def _current(mine: Sequence[PodFacts], attempt: int) -> PodFacts | None:
    """Of a replica's pods, the one of ``attempt`` not being deleted, else the newest."""
    if len(mine) == 1:
        return mine[0] if mine[0].attempt == attempt else None
    current = sorted((f for f in mine if f.attempt == attempt), key=lambda f: f.order)
    return current[-1] if current else None


#: job → replica → what its last pass worked out: its DAG task name and hostname, the attempt nodes and pod
#: facts it read, and its state. A replica whose nodes are equal and whose pods' facts are the same objects
#: (the same versions of its pods, :func:`pod_facts`) has the same state: a pass over a big job works out
#: only the replicas that changed. Each pass keeps its job's live replicas only (a removed one goes at once).
_Seen = tuple[str, str, "AttemptNodes", tuple["PodFacts", ...], "ReplicaState"]
_STATES: dict[str, dict[Replica, _Seen]] = {}
#: Jobs remembered before that memo starts over (deleted jobs' entries go then).
_JOBS_KEPT = 2_000


def _same_pods(a: Sequence[PodFacts], b: Sequence[PodFacts]) -> bool:
    """The same pod facts objects, in the same order (facts are remembered per pod version, so the same
    versions of the same pods)."""
    return len(a) == len(b) and all(map(operator.is_, a, b))


class _PodFields(TypedDict, total=False):
    pod_name: str | None
    pod_phase: str | None
    ready: bool
    exit_code: int | None
    finished: bool
    ended_at: str | None


def _pod_fields(pod: PodFacts | None) -> _PodFields:
    """The :class:`ReplicaState` fields read from the current attempt's pod (none: not created yet)."""
    if pod is None:
        return {"pod_name": None, "pod_phase": None, "ready": False, "exit_code": None, "finished": False}
    return {
        "pod_name": pod.name,
        "pod_phase": pod.phase,
        "ready": pod.ready,
        "exit_code": pod.exit_code,
        "finished": pod.finished,
        "ended_at": pod.ended_at,
    }


def _state(job_name: str, r: Replica, nodes: AttemptNodes, mine: Sequence[PodFacts]) -> ReplicaState:
    """One replica's current attempt, from its attempt nodes and its pods' facts."""
    attempt = max([*nodes, *(f.attempt for f in mine), 0])
    pod = _current(mine, attempt)
    node = nodes.get(attempt)
    failed = (pod is not None and pod.phase == PodPhase.FAILED) or (
        node is not None and node.phase in FAILED_NODE_PHASES
    )
    failed_pods = sorted((f for f in mine if f.phase == PodPhase.FAILED), key=lambda f: f.attempt)
    last_failed = failed_pods[-1] if failed_pods else None
    # the pod whose exit code describe_failure reports: the current one when it failed, else the last failed
    reported = pod if pod is not None and pod.phase == PodPhase.FAILED else last_failed
    return ReplicaState(
        task=r.task,
        index=r.index,
        rank=r.rank,
        hostname=r.hostname(job_name),
        attempt=attempt,
        failed=failed,
        node_message=node.message if node else None,
        last_failure_code=last_failed.exit_code if last_failed else None,
        problem=_problem(pod, last_failed),
        failure_reason=reported.failure_reason if reported is not None else None,
        progress=node.progress if node else None,
        **_pod_fields(pod),
    )


def replica_states(
    job_name: str,
    membership: Membership,
    workflow: Workflow | None,
    pods: Sequence[Pod],
) -> tuple[ReplicaState, ...]:
    """Every live replica of ``membership`` in rank order (retired ones left out), with its current attempt."""
    pods_of = _by_hostname(pods)
    nodes_of = _attempt_nodes(workflow)
    states = []
    before, now = _STATES.get(job_name, {}), {}
    for r in live_replicas(membership, workflow).replicas:
        seen = before.get(r)
        if seen is not None:
            dag_name, host = seen[0], seen[1]
        else:
            # diengine/pod: the long form, whatever the hostname
            dag_name, host = dag_task_name(r.task, r.index), hostname(job_name, r.task, r.index)
        nodes = nodes_of.get(dag_name, _NO_NODES)
        mine = pods_of.get(host, ())
        if seen is not None and seen[2] == nodes and _same_pods(seen[3], mine):
            now[r] = seen
            states.append(seen[4])
            continue
        state = _state(job_name, r, nodes, mine)
        now[r] = (dag_name, host, nodes, tuple(mine), state)
        states.append(state)
    if job_name not in _STATES and len(_STATES) >= _JOBS_KEPT:
        _STATES.clear()
    _STATES[job_name] = now
    return tuple(states)
