"""Which phase a job is in, and why (pure): the failure, success and restart policies in one place.

Order of the rules (first match wins):

1. invalid stored object                    → Failed (the validation problems)
2. Workflow known to have existed, now gone  → Failed (WorkflowDeleted; nothing is recreated)
3. no Workflow yet                           → Pending
4. restarts > backoffLimit, or a replica's current attempt failed with no retry left → Failed
5. Workflow Failed / Error                   → Failed
6. Workflow Succeeded, or every replica Succeeded → Succeeded
7. membership changed (generation grew; until every replica is up again) → Rescheduling
8. a replica failed and will be retried, or a retry's pod is not up yet → Restarting
9. some replica has no pod                   → Pending
10. every replica Running and ready (or done) → Running, else Starting
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dihera.controller.replicas import FAILED_NODE_PHASES, ReplicaState

__all__ = ["PhaseDecision", "decide_phase", "describe_failure"]


@dataclass(frozen=True)
class PhaseDecision:
    phase: str
    message: str
    #: Machine-readable cause for Events (``WorkflowDeleted``, ``BackoffLimitExceeded``...), else None.
    cause: str | None = None


def describe_failure(state: ReplicaState) -> str:
    """``replica collector-1 (rank 3, pod p) failed with exit code 3``, with what is known."""
    where = f"rank {state.rank}" + (f", pod {state.pod_name}" if state.pod_name else "")
    code = state.exit_code if state.failed else state.last_failure_code
    if code:
        how = f"failed with exit code {code}"
    elif state.node_message:
        how = f"failed: {state.node_message}"
    else:
        how = "failed"
    return f"replica {state.name} ({where}) {how}"


def decide_phase(
    *,
    states: Sequence[ReplicaState],
    workflow: Mapping[str, Any] | None,
    backoff_limit: int,
    restarts: int,
    workflow_existed: bool,
    workflow_name: str,
    rescheduling: bool,
    invalid: str | None = None,
    foreign_workflow: bool = False,
) -> PhaseDecision:
    """The phase for what was observed. ``restarts`` already includes this observation."""
    if invalid is not None:
        return PhaseDecision("Failed", f"the DIJob is invalid; nothing was created: {invalid}", "InvalidJob")
    if workflow is None:
        if workflow_existed:
            return PhaseDecision(
                "Failed",
                f"the Workflow {workflow_name} was deleted while the job was running; dihera does not recreate it",
                "WorkflowDeleted",
            )
        return PhaseDecision("Pending", "creating the job's Workflow")
    if foreign_workflow:
        return PhaseDecision("Pending", f"waiting for the Workflow {workflow_name} of a deleted DIJob to go away")

    failed = [s for s in states if s.failed]
    if restarts > backoff_limit:
        who = "; ".join(describe_failure(s) for s in states if s.failed or s.attempt > 0)
        return PhaseDecision(
            "Failed", f"{restarts} restarts exceed backoffLimit {backoff_limit}: {who}", "BackoffLimitExceeded"
        )
    exhausted = [s for s in failed if s.attempt >= backoff_limit or restarts >= backoff_limit]
    if exhausted:
        who = "; ".join(describe_failure(s) for s in exhausted)
        return PhaseDecision(
            "Failed",
            f"{who} after {restarts} restart(s); backoffLimit {backoff_limit} reached",
            "BackoffLimitExceeded",
        )
    wf_phase = (workflow.get("status") or {}).get("phase") or ""
    if wf_phase in FAILED_NODE_PHASES:
        who = "; ".join(describe_failure(s) for s in failed)
        wf_msg = (workflow.get("status") or {}).get("message") or ""
        detail = who or wf_msg or "no replica reported a failure"
        return PhaseDecision("Failed", f"the Workflow {workflow_name} {wf_phase.lower()}ed: {detail}", "WorkflowFailed")
    if wf_phase == "Succeeded" or (states and all(s.pod_phase == "Succeeded" for s in states)):
        return PhaseDecision("Succeeded", f"all {len(states)} replicas succeeded")

    all_up = bool(states) and all(s.up for s in states)
    if rescheduling and not all_up:
        up = sum(1 for s in states if s.up)
        return PhaseDecision(
            "Rescheduling", f"the replicas changed; {up}/{len(states)} up, waiting for the new ones to be ready"
        )
    if failed:
        s = failed[0]
        return PhaseDecision(
            "Restarting",
            f"{describe_failure(s)}; restarting it in place as retry {s.attempt + 1} (same rank and FQDN)",
        )
    retrying = [s for s in states if s.attempt > 0 and not s.up]
    if retrying:
        names = ", ".join(s.name for s in retrying)
        return PhaseDecision("Restarting", f"restarting {names} in place (same rank and FQDN)")
    missing = [s for s in states if s.pod_phase is None]
    if missing:
        return PhaseDecision("Pending", f"{len(states) - len(missing)}/{len(states)} pods created")
    if all_up:
        return PhaseDecision("Running", f"all {len(states)} replicas are running")
    return PhaseDecision("Starting", f"all {len(states)} pods created; waiting for them to be ready")
