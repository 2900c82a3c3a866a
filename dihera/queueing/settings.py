"""How dihera uses Kueue: one immutable object built at the entry point (``--kueue``, the chart's ``kueue.*``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from dihera.model import Priority

__all__ = ["DEFAULT_PRIORITY_CLASSES", "NONPREEMPTIBLE_CLASS", "KueueSettings", "parse_priority_classes"]

#: ``spec.priority`` → the Kueue WorkloadPriorityClass of a preemptible job (the chart creates them:
#: values 100, 200, 300).
DEFAULT_PRIORITY_CLASSES: Mapping[str, str] = {
    Priority.LOW.value: "dihera-low",
    Priority.NORMAL.value: "dihera-normal",
    Priority.HIGH.value: "dihera-high",
}
#: The WorkloadPriorityClass of every ``preemptible: false`` job (value 1000: above every class above, so a
#: ClusterQueue preempting ``LowerPriority`` never preempts it; docs/queueing.md, "Priority and preemption").
NONPREEMPTIBLE_CLASS = "dihera-nonpreemptible"


@dataclass(frozen=True)
class KueueSettings:
    """``priority_classes``: ``spec.priority`` → WorkloadPriorityClass name of preemptible jobs;
    ``nonpreemptible_class``: the class of every ``preemptible: false`` job; ``scale_wait``: seconds a
    scale-up waits for Kueue to admit the added replicas before it is refused."""

    priority_classes: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_PRIORITY_CLASSES))
    nonpreemptible_class: str = NONPREEMPTIBLE_CLASS
    scale_wait: float = 15.0

    def __post_init__(self) -> None:
        missing = [p.value for p in Priority if p.value not in self.priority_classes]
        if missing:
            given = ", ".join(f"{k}={v}" for k, v in self.priority_classes.items()) or "none"
            raise ValueError(f"--kueue-priority-classes: no class for priority {', '.join(missing)} (given: {given})")
        if self.scale_wait <= 0:
            raise ValueError(f"--kueue-scale-wait: {self.scale_wait} must be > 0 seconds")

    def priority_class(self, priority: Priority, preemptible: bool) -> str:
        """The WorkloadPriorityClass of a job with ``spec.priority`` and ``spec.preemptible``."""
        return self.priority_classes[priority.value] if preemptible else self.nonpreemptible_class


def parse_priority_classes(text: str) -> dict[str, str]:
    """``low=dihera-low,normal=dihera-normal,high=dihera-high`` → a mapping; errors name the entry."""
    out: dict[str, str] = {}
    for entry in (e.strip() for e in text.split(",")):
        if not entry:
            continue
        key, sep, value = entry.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ValueError(f"--kueue-priority-classes: {entry!r} is not PRIORITY=CLASS (e.g. high=dihera-high)")
        if key.strip() not in {p.value for p in Priority}:
            valid = ", ".join(p.value for p in Priority)
            raise ValueError(f"--kueue-priority-classes: {key.strip()!r} is not a priority; valid: {valid}")
        out[key.strip()] = value.strip()
    return {**DEFAULT_PRIORITY_CLASSES, **out}
