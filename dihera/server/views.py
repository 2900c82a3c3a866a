"""What the routes answer, computed from cached objects (pure)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dihera.constants import LABEL_POD, PROFILINGS_CHECKPOINT
from dihera.kube.experiments import trial_result
from dihera.kube.snapshot import JobSnapshot
from dihera.membership import Membership, Replica
from dihera.naming import dag_task_name, fqdn, hostname
from dihera.render.env import MEMBERSHIP_FILE
from dihera.scaling.executor import ScaleResult
from dihera.server.models import ExperimentView, JobSummary, JobView, PodView, ReplicaOut, ScaleOut, TaskOut, TrialOut
from dihera.shapes.pod import Pod
from dihera.sweeps.results import Goal, best, by_configuration

__all__ = [
    "addresses",
    "current_pods",
    "experiment_view",
    "job_view",
    "membership_of",
    "pod_view",
    "replica_rows",
    "scale_out",
    "summary",
]


def membership_of(job: JobSnapshot) -> Membership | None:
    data = (job.configmap or {}).get("data") or {}
    return Membership.from_json(data[MEMBERSHIP_FILE]) if MEMBERSHIP_FILE in data else None


def current_pods(pods: Sequence[Pod]) -> dict[str, Pod]:
    """Each replica's newest pod by hostname (a retried replica has older, finished pods too); one pass."""
    newest: dict[str, tuple[tuple[bool, str], Pod]] = {}
    for p in pods:
        meta = p.get("metadata") or {}
        host = (meta.get("labels") or {}).get(LABEL_POD)
        if host is None:
            continue
        rank = (meta.get("deletionTimestamp") is None, meta.get("creationTimestamp", ""))
        if host not in newest or newest[host][0] <= rank:
            newest[host] = (rank, p)
    return {host: p for host, (_, p) in newest.items()}


def _row(job: JobSnapshot, r: Replica, domain: str, pods: Mapping[str, Pod]) -> ReplicaOut:
    meta = job.body["metadata"]
    pod = pods.get(hostname(meta["name"], r.task, r.index))
    return ReplicaOut(
        name=dag_task_name(r.task, r.index),
        rank=r.rank,
        task=r.task,
        index=r.index,
        fqdn=fqdn(meta["name"], meta["namespace"], r.task, r.index, domain, r.short),
        pod=pod["metadata"]["name"] if pod else None,
        phase=(pod.get("status") or {}).get("phase") if pod else None,
    )


def replica_rows(job: JobSnapshot, domain: str) -> list[ReplicaOut]:
    """Every live replica in rank order, with its FQDN and its pod's phase."""
    membership = membership_of(job)
    if membership is None:
        return []
    pods = current_pods(job.pods)
    return [_row(job, r, domain, pods) for r in membership.replicas]


def addresses(job: JobSnapshot, domain: str) -> list[str]:
    """The replicas' FQDNs in rank order (DI-orchestrator's GET replicas; vacant ranks are left out)."""
    membership = membership_of(job)
    if membership is None:
        return []
    meta = job.body["metadata"]
    return [fqdn(meta["name"], meta["namespace"], r.task, r.index, domain, r.short) for r in membership.replicas]


def summary(job: JobSnapshot) -> JobSummary:
    meta, spec = job.body["metadata"], job.body.get("spec") or {}
    status = job.body.get("status") or {}
    membership = membership_of(job)
    tasks = []
    for t in spec.get("tasks") or []:
        name = t.get("name") or t.get("type")
        live = len(membership.of_task(name)) if membership else 0
        tasks.append(TaskOut(name=name, type=t.get("type", "none"), replicas=live, specReplicas=t.get("replicas", 1)))
    return JobSummary(
        namespace=meta["namespace"],
        name=meta["name"],
        phase=status.get("phase"),
        replicas=len(membership.replicas) if membership else 0,
        membershipGeneration=membership.generation if membership else None,
        minReplicas=spec.get("minReplicas"),
        maxReplicas=spec.get("maxReplicas"),
        tasks=tasks,
    )


def _checkpoint(status: Mapping[str, Any]) -> dict[str, Any] | None:
    """The last checkpoint a job reported (``status.profilings.checkpoint``), when it is an object."""
    found = (status.get("profilings") or {}).get(PROFILINGS_CHECKPOINT)
    return dict(found) if isinstance(found, Mapping) else None


def job_view(job: JobSnapshot, domain: str) -> JobView:
    """The job's summary, its replicas and the progress its status carries (the Argo UI's workflow link)."""
    status = job.body.get("status") or {}
    return JobView(
        job=summary(job),
        progress=status.get("progress"),
        taskProgress=dict(status.get("taskProgress") or {}),
        checkpoint=_checkpoint(status),
        replicas=replica_rows(job, domain),
        training=status.get("training"),
    )


def pod_view(job: JobSnapshot, pod_name: str, domain: str) -> PodView | None:
    """The replica the job's pod ``pod_name`` ran (the Argo UI's pod link); None: no such pod of the job."""
    pod = next((p for p in job.pods if (p.get("metadata") or {}).get("name") == pod_name), None)
    if pod is None:
        return None
    host = (pod["metadata"].get("labels") or {}).get(LABEL_POD)
    meta = job.body["metadata"]
    rows = [r for r in replica_rows(job, domain) if hostname(meta["name"], r.task, r.index) == host]
    replica = rows[0] if rows else None
    return PodView(
        namespace=meta["namespace"],
        job=meta["name"],
        pod=pod_name,
        podPhase=(pod.get("status") or {}).get("phase"),
        replica=replica,
        current=replica is not None and replica.pod == pod_name,
    )


#: A trial's phase → the count it goes to in an experiment's view (any other phase: running); a trial suspended
#: by hand ends its node as early stopping's do (the trial template's failure condition).
_COUNTED = {"Succeeded": "done", "Failed": "failed", "Stopped": "stopped", "Suspended": "stopped"}


def experiment_view(
    namespace: str, name: str, jobs: Sequence[Mapping[str, Any]], metric: str, goal: Goal, trials: int | None
) -> ExperimentView:
    """A sweep's trials from their DIJobs: each trial's values, seed, phase and metric, the counts, the best
    configuration so far (the same ranking as the sweep's summary step: dihera.sweeps.results)."""
    results = sorted((trial_result(j, metric) for j in jobs), key=lambda r: r.index)
    counts = dict.fromkeys(("done", "running", "failed", "stopped"), 0)
    for r in results:
        counts[_COUNTED.get(r.phase, "running")] += 1
    top = best(by_configuration(results), goal)
    chosen: dict[str, object] | None = None
    if top is not None:
        chosen = {"values": dict(top.values), "mean": top.mean, "halfWidth": top.half_width, "seeds": top.reported}
    rows = [
        TrialOut(
            index=r.index, job=r.job, values=dict(r.values), seed=r.seed, phase=r.phase, metric=r.metric,
            seconds=r.seconds,
        )
        for r in results
    ]  # fmt: skip
    return ExperimentView(
        namespace=namespace, name=name, metric=metric, goal=goal.value, trials=trials, counts=counts, best=chosen,
        rows=rows,
    )  # fmt: skip


def scale_out(result: ScaleResult, domain: str) -> ScaleOut:
    def row(r: Replica) -> ReplicaOut:
        return ReplicaOut(
            name=dag_task_name(r.task, r.index),
            rank=r.rank,
            task=r.task,
            index=r.index,
            fqdn=fqdn(result.name, result.namespace, r.task, r.index, domain, r.short),
            pod=None,
            phase=None,
        )

    return ScaleOut(
        namespace=result.namespace,
        name=result.name,
        changed=result.changed,
        membershipGeneration=result.membership.generation,
        replicas=dict(result.replicas),
        added=[row(r) for r in result.added],
        removed=[dag_task_name(r.task, r.index) for r in result.removed],
    )
