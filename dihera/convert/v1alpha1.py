"""DI-orchestrator < 1.0 (``v1alpha1``): coordinator, collector and learner pod templates -> tasks (pure).

- ``spec.coordinator`` -> a task of type ``none`` named ``coordinator`` (1 replica);
- ``spec.collector`` / ``spec.learner`` (``actor`` in the older NerveXJob) -> the collector and
  learner tasks, with the replica counts given as flags, else read from ``collector_num`` /
  ``learner_num`` in the DI-engine config embedded in the commands, else 1;
- an ``AggregatorConfig``'s ``spec.aggregator`` -> a task of type ``none`` named ``aggregator``;
- pod templates kept whole; ``volumes``, ``cleanPodPolicy`` and ``priorityClassName`` carried over.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import cast

from dihera.convert.common import Notes, clean_pod_policy, job_manifest, metadata, priority
from dihera.convert.scan import CountHint, count_hints, runtime_variable_warnings
from dihera.errors import format_value

__all__ = ["Counts", "convert_v1alpha1", "is_v1alpha1"]

#: v1alpha1 spec key -> (task name, task type); NerveXJob's ``actor`` was later named ``collector``.
_COMPONENTS: tuple[tuple[str, str, str], ...] = (
    ("coordinator", "coordinator", "none"),
    ("collector", "collector", "collector"),
    ("actor", "collector", "collector"),
    ("learner", "learner", "learner"),
)
_KNOWN = {"group", "priorityClassName", "cleanPodPolicy", "volumes", *(c[0] for c in _COMPONENTS)}


@dataclass(frozen=True)
class Counts:
    """Replica counts given on the command line (None: read them from the config, else 1)."""

    collectors: int | None = None
    learners: int | None = None


def is_v1alpha1(doc: Mapping[str, object]) -> bool:
    spec = doc.get("spec")
    return isinstance(spec, Mapping) and any(c[0] in spec for c in _COMPONENTS) and "tasks" not in spec


def _count(task: str, flag: int | None, hints: list[CountHint], path: str, notes: Notes) -> int:
    keys = ("replicas", f"{task}_num", f"{task}_target_num")  # the component's own field first
    found = [h for key in keys for h in hints if h.key == key]
    if found and len({h.value for h in found if h.key == found[0].key}) > 1:
        values = ", ".join(f"{h.key}={h.value} at {h.path}" for h in found)
        notes.warn(path, f"replicas: the embedded DI-engine config disagrees with itself ({values}); using the first")
    if flag is not None:
        if found and found[0].value != flag:
            notes.warn(
                path, f"replicas {flag} from --{task}s, not {found[0].key}={found[0].value} read at {found[0].path}"
            )
        return flag
    if found:
        hint = found[0]
        where = (
            hint.path if hint.key == "replicas" else f"{hint.key}={hint.value} in the DI-engine config at {hint.path}"
        )
        notes.say(path, f"replicas {hint.value}, read from {where}")
        return max(hint.value, 1)
    notes.warn(path, f"replicas 1: no --{task}s flag and no {task}_num in the embedded DI-engine config")
    return 1


def _task(name: str, type_: str, replicas: int, template: object, path: str, notes: Notes) -> dict[str, object] | None:
    if not isinstance(template, Mapping) or not isinstance(template.get("spec"), Mapping):
        notes.problem(f"{path}.template", f"must be a pod template with a spec (got {format_value(template)})")
        return None
    for field, warning in runtime_variable_warnings(template, f"{path}.template"):
        notes.warn(field, warning)
    entry: dict[str, object] = {"name": name, "type": type_, "replicas": replicas, "template": dict(template)}
    return entry


def _aggregator(config: Mapping[str, object] | None, notes: Notes) -> dict[str, object] | None:
    if config is None:
        return None
    spec = given.get("aggregator") if isinstance(given := config.get("spec"), Mapping) else None
    if not isinstance(spec, Mapping):
        notes.problem("AggregatorConfig.spec.aggregator", "is required (a pod template under spec.aggregator.template)")
        return None
    notes.warn(
        "AggregatorConfig.spec.aggregator",
        "became the task 'aggregator' with 1 replica; DI-orchestrator < 1.0 created one aggregator per "
        "multi-GPU learner on demand, dihera runs the replicas the spec asks for",
    )
    return _task("aggregator", "none", 1, spec.get("template"), "AggregatorConfig.spec.aggregator", notes)


def _spec_fields(spec: Mapping[str, object], notes: Notes) -> dict[str, object]:
    """priority, cleanPodPolicy and volumes carried over; group and unknown fields dropped (said)."""
    out: dict[str, object] = {}
    if (p := priority(spec.get("priorityClassName"), "spec.priorityClassName", notes)) is not None:
        out["priority"] = p
    if (c := clean_pod_policy(spec.get("cleanPodPolicy"), "spec.cleanPodPolicy", notes)) is not None:
        out["cleanPodPolicy"] = c
    if spec.get("group"):
        notes.warn("spec.group", f"{format_value(spec['group'])} has no equivalent in dihera; dropped")
    for key in sorted(set(spec) - _KNOWN):
        notes.warn(f"spec.{key}", "unknown to DI-orchestrator v1alpha1 and to dihera; dropped")
    if spec.get("volumes"):
        out["volumes"] = list(cast(Iterable[object], spec["volumes"]))  # as the document gives them
    return out


def _component_task(
    key: str, name: str, type_: str, spec: Mapping[str, object], flag: int | None, hints: list[CountHint], notes: Notes
) -> dict[str, object] | None:
    """The task of the component ``spec.<key>`` (None: it has a problem); ``flag``: the count given."""
    if key == "actor":
        notes.say("spec.actor", "NerveXJob's actor is the collector task")
    path = f"spec.{key}"
    component = given if isinstance(given := spec[key], Mapping) else {}
    for extra in sorted(set(component) - {"template", "replicas"}):
        notes.warn(f"{path}.{extra}", "unknown to DI-orchestrator v1alpha1 and to dihera; dropped")
    own = component.get("replicas")
    local = [CountHint("replicas", own, f"{path}.replicas")] if isinstance(own, int) and own >= 1 else []
    replicas = 1 if name == "coordinator" else _count(name, flag, local + hints, path, notes)
    return _task(name, type_, replicas, component.get("template"), path, notes)


def _component_tasks(
    spec: Mapping[str, object], counts: Counts, hints: list[CountHint], notes: Notes
) -> list[dict[str, object]]:
    """The coordinator, collector and learner tasks, in that order (``actor``: the collector)."""
    flags = {"collector": counts.collectors, "learner": counts.learners}
    tasks: list[dict[str, object]] = []
    for key, name, type_ in _COMPONENTS:
        if key not in spec or any(t["name"] == name for t in tasks):
            continue
        if (entry := _component_task(key, name, type_, spec, flags.get(name), hints, notes)) is not None:
            tasks.append(entry)
    return tasks


def _warn_missing(spec: Mapping[str, object], notes: Notes) -> None:
    for name in ("coordinator", "collector", "learner"):
        if not any(c[1] == name and c[0] in spec for c in _COMPONENTS):
            notes.warn(f"spec.{name}", f"missing: the job has no {name} task")


def convert_v1alpha1(
    doc: Mapping[str, object], counts: Counts, aggregator: Mapping[str, object] | None, notes: Notes
) -> dict[str, object]:
    """The v2alpha1 DIJob for a v1alpha1 one (problems and warnings go to ``notes``)."""
    spec = cast(Mapping[str, object], doc["spec"])  # an object: is_v1alpha1
    meta = metadata(doc, notes)
    out = _spec_fields(spec, notes)
    hints = count_hints(doc)
    tasks = _component_tasks(spec, counts, hints, notes)
    _warn_missing(spec, notes)
    if (entry := _aggregator(aggregator, notes)) is not None:
        tasks.append(entry)
    out["tasks"] = tasks
    return job_manifest(meta, out)
