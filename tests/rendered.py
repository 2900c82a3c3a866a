"""What Argo and the kubelet make of rendered objects: a DAG node's template with its parameters substituted, a
container's env as it sees it. (Builders of the objects tests make are in tests/builders/.)"""

from __future__ import annotations

import copy
import re
from typing import Any

from dihera.render import RenderedJob

_VAR = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")  # the kubelet's $(VAR) expansion


def _substitute(value: Any, params: dict[str, str]) -> Any:
    if isinstance(value, str):
        for k, v in params.items():
            value = value.replace("{{inputs.parameters." + k + "}}", v)
        return value
    if isinstance(value, list):
        return [_substitute(v, params) for v in value]
    if isinstance(value, dict):
        return {k: _substitute(v, params) for k, v in value.items()}
    return value


def replica_template(rendered: RenderedJob, dag_task: str) -> dict[str, Any]:
    """The task template of one DAG node with its parameters substituted, as Argo would."""
    spec = rendered.workflow["spec"]
    dag = next(t for t in spec["templates"] if "dag" in t)
    node = next(t for t in dag["dag"]["tasks"] if t["name"] == dag_task)
    params = {p["name"]: p["value"] for p in node["arguments"]["parameters"]}
    template = next(t for t in spec["templates"] if t["name"] == node["template"])
    return _substitute(copy.deepcopy(template), params)


def container_env(rendered: RenderedJob, dag_task: str, container_name: str = "main") -> dict[str, str]:
    """The env one container sees as the kubelet gives it: ConfigMap keys read, ``$(VAR)`` of earlier ones expanded."""
    template = replica_template(rendered, dag_task)
    c = next(c for c in template["containerSet"]["containers"] if c["name"] == container_name)
    data = rendered.configmap["data"]
    env: dict[str, str] = {}
    for e in c["env"]:
        if "value" in e:
            env[e["name"]] = _VAR.sub(lambda m: env.get(m.group(1), m.group(0)), e["value"])
        else:
            ref = e["valueFrom"]["configMapKeyRef"]
            assert ref["name"] == rendered.configmap["metadata"]["name"]
            env[e["name"]] = data[ref["key"]]
    return env


def dag_task_names(rendered: RenderedJob) -> list[str]:
    dag = next(t for t in rendered.workflow["spec"]["templates"] if "dag" in t)
    return [t["name"] for t in dag["dag"]["tasks"]]
