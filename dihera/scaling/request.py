"""What a scale request asks (pure): set, add or remove a task's replicas, remove named ones, or sync."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

__all__ = ["Action", "ScaleRequest"]


class Action(StrEnum):
    """What a scale request asks."""

    SET = "set"  # set the task's replicas to ``count``
    ADD = "add"  # add ``count`` replicas to the task
    REMOVE = "remove"  # remove ``count`` replicas of the task, the highest-ranked
    REMOVE_NAMED = "remove-named"  # remove the replicas ``names`` (DAG task names, ``collector-3``)
    SYNC = "sync"  # make membership and spec agree: whichever is newer wins (see spec_is_current)


@dataclass(frozen=True)
class ScaleRequest:
    """One scale request. Build with the class methods."""

    action: Action
    task: str | None = None
    count: int = 0
    names: tuple[str, ...] = ()

    @classmethod
    def set_replicas(cls, task: str, replicas: int) -> ScaleRequest:
        return cls(Action.SET, task, replicas)

    @classmethod
    def add(cls, task: str, replicas: int) -> ScaleRequest:
        return cls(Action.ADD, task, replicas)

    @classmethod
    def remove(cls, task: str, replicas: int) -> ScaleRequest:
        return cls(Action.REMOVE, task, replicas)

    @classmethod
    def remove_named(cls, names: Iterable[str]) -> ScaleRequest:
        return cls(Action.REMOVE_NAMED, names=tuple(dict.fromkeys(names)))

    @classmethod
    def sync(cls) -> ScaleRequest:
        return cls(Action.SYNC)
