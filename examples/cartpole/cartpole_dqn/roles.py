"""Which DI-engine role a process plays (from its `--labels`, else its node id), and the world size."""

from __future__ import annotations

from collections.abc import Iterable

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
