"""Which DI-engine role a process plays (from its `--labels`, else its node id), and how it starts."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

ROLES = ("learner", "evaluator", "collector")


def pick_role(labels: Iterable[str], node_id: int) -> str:
    """The role named in `labels`; without one, 0 learner, 1 evaluator, the rest collectors."""
    named = sorted(set(labels) & set(ROLES))
    if len(named) > 1:
        raise ValueError(f"--labels names several roles {named}; give exactly one of {list(ROLES)}")
    if named:
        return named[0]
    if node_id == 0:
        return "learner"
    if node_id == 1:
        return "evaluator"
    return "collector"


def world_size(di_nodes: str) -> int:
    """Number of replicas in DI_NODES (vacant entries count: they keep their rank)."""
    return len(di_nodes.split(",")) if di_nodes else 1


def barrier_timeout(environ: Mapping[str, str]) -> float:
    """Seconds the one-shot start-up barrier waits: `DIHERA_BARRIER_TIMEOUT` (default 300), but 0 (no
    barrier) for a replica that starts after the job's membership changed (`DI_MEMBERSHIP_GENERATION`
    past 1: a scale-up's new replica, or one restarted after a scale): its peers are past their barrier
    and would never answer it."""
    if int(environ.get("DI_MEMBERSHIP_GENERATION") or 1) > 1:
        return 0.0
    return float(environ.get("DIHERA_BARRIER_TIMEOUT", "300"))
