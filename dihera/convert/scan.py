"""Read what older DIJobs keep inside their containers' commands (pure): port variables and counts."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import cast

__all__ = [
    "V1_PORTS",
    "CountHint",
    "count_hints",
    "dist_pipeline_fields",
    "runtime_variable_warnings",
    "runtime_variables",
    "server_requests",
    "strings",
]

#: The ports DI-orchestrator < 1.0 gave its components in these variables (dihera sets none of them).
V1_PORTS: Mapping[str, int] = {
    "COLLECTOR_PORT": 22270,
    "LEARNER_PORT": 22271,
    "AGGREGATOR_PORT": 22272,
    "COORDINATOR_PORT": 22273,
}
_VARIABLE = re.compile(
    r"\$(?:\{|\()?((?:COORDINATOR|COLLECTOR|LEARNER|AGGREGATOR)_(?:PORT|URL|HOST|ADDR|ADDRESS)"
    r"|DI_[A-Z0-9_]*_ARGS?|HOSTNAME(?=\}?\)?\.))"
)
_SERVER = re.compile(r"\b(operator_server|system_addr)\b")
#: DI-engine's old parallel pipeline (`ding -m dist --module coordinator|collector|learner...`)
_DIST = re.compile(r"\bding\s+(?:-m|--mode)[=\s]+dist\b")
_COUNT = re.compile(r"""\b(collector_num|learner_num|collector_target_num|learner_target_num)['"]?\s*[:=]\s*(\d+)""")


def strings(value: object, path: str) -> Iterator[tuple[str, str]]:
    """Every string in ``value`` with its field path (``spec.learner.template.spec.containers[0].args[0]``)."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from strings(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from strings(v, f"{path}[{i}]")


def _container_fields(template: object, path: str) -> Iterator[tuple[str, str]]:
    spec = template.get("spec") if isinstance(template, Mapping) else None
    if not isinstance(spec, Mapping):
        return
    for kind in ("initContainers", "containers"):
        for i, c in enumerate(spec.get(kind) or []):
            if not isinstance(c, Mapping):
                continue
            for field in ("command", "args", "env"):
                yield from strings(c.get(field), f"{path}.spec.{kind}[{i}].{field}")


def runtime_variables(template: object, path: str) -> list[tuple[str, str]]:
    """(field path, variable) for each use of a variable DI-orchestrator < 1.0 set and dihera does not."""
    found: dict[tuple[str, str], None] = {}
    for field, text in _container_fields(template, path):
        for match in _VARIABLE.finditer(text):
            found[(_container_path(field), match.group(1))] = None
    return list(found)


def _advice(variable: str) -> str:
    if variable == "HOSTNAME":
        return (
            "uses $HOSTNAME.<domain>, which does not resolve in dihera (no Service per pod): "
            "a pod's own name is $DI_FQDN (<pod>.di-<job>.<namespace>.svc...), its peers' are in DI_<TASK>_NODES"
        )
    if variable.endswith(("_ARG", "_ARGS")):
        return (
            f"uses ${variable}, which DI-orchestrator set (ditask flags) and dihera does not: "
            "`ditask --platform k8s` reads DI_NODES and DI_RANK; write the flags the command needs"
        )
    port = V1_PORTS.get(variable)
    hint = f" (it was {port}; set it in the container's env if the command still needs it)" if port else ""
    return (
        f"uses ${variable}, which DI-orchestrator < 1.0 set and dihera does not{hint}; "
        "peers' addresses are in DI_NODES and DI_<TASK>_NODES"
    )


def runtime_variable_warnings(template: object, path: str) -> list[tuple[str, str]]:
    """(field path, warning) for each variable the old runtime set that dihera does not."""
    return [(field, _advice(variable)) for field, variable in runtime_variables(template, path)]


def _container_path(field: str) -> str:
    """``...containers[0].args[1]`` -> ``...containers[0].args``: one warning per field, not per item."""
    head, _, tail = field.rpartition(".")
    return f"{head}.{tail.split('[', 1)[0]}" if head else field


@dataclass(frozen=True)
class CountHint:
    """A replica count read from an embedded DI-engine config: ``collector_num=2`` at ``path``."""

    key: str
    value: int
    path: str


def count_hints(document: object) -> list[CountHint]:
    """Every ``collector_num`` / ``learner_num`` (and ``*_target_num``) assignment in the document's strings."""
    hints = []
    for path, text in strings(document, ""):
        for match in _COUNT.finditer(text):
            hints.append(CountHint(match.group(1), int(match.group(2)), path))
    return hints


def server_requests(document: object) -> list[str]:
    """Paths of strings whose DI-engine config talks to DI-orchestrator's di-server (``operator_server``)."""
    return [path for path, text in strings(document, "") if _SERVER.search(text)]


def _containers(value: object, path: str) -> Iterator[tuple[str, Mapping[str, object]]]:
    """Every container and init container of every pod template in ``value``, with its field path."""
    if isinstance(value, Mapping):
        for kind in ("initContainers", "containers"):
            items = value.get(kind)
            for i, c in enumerate(items if isinstance(items, list) else []):
                if isinstance(c, Mapping):
                    yield f"{path}.{kind}[{i}]" if path else f"{kind}[{i}]", c
        for k, v in value.items():
            if k not in ("initContainers", "containers"):
                yield from _containers(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _containers(v, f"{path}[{i}]")


def dist_pipeline_fields(document: object) -> list[str]:
    """Paths of the containers whose command and args run DI-engine's old ``ding -m dist`` pipeline."""
    found = []
    for path, container in _containers(document, ""):
        words = [str(w) for field in ("command", "args") for w in cast(Iterable[object], container.get(field) or [])]
        if _DIST.search(" ".join(words)):
            found.append(path)
    return found
