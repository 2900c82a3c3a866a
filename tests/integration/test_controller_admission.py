"""DI-orchestrator's rejected DIJobs are refused by the API server at apply time (CEL rules), naming the field."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from dihera.kube.jobs import JobStore

pytestmark = pytest.mark.cluster
DIHERA = str(Path(sys.executable).with_name("dihera"))


def _task(type_: str, name: str | None = None) -> dict[str, Any]:
    t: dict[str, Any] = {"type": type_, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}
    if name:
        t["name"] = name
    return t


@pytest.mark.compat
@pytest.mark.parametrize(
    ("case", "tasks", "field", "words"),
    [
        ("two tasks of one type", [_task("collector", "a"), _task("collector", "b")], "spec.tasks", "collector"),
        ("one name twice", [_task("none", "x"), _task("learner", "x")], "spec.tasks", "unique"),
        ("unnamed none task", [_task("none")], "spec.tasks", "name"),
    ],
)
def test_rejected_at_apply_time(
    case: str,
    tasks: list[dict[str, Any]],
    field: str,
    words: str,
    dijob_crd: None,
    cluster: client.ApiClient,
    namespace: str,
) -> None:
    manifest = {
        "apiVersion": "diengine.opendilab.org/v2alpha1",
        "kind": "DIJob",
        "metadata": {"name": "rejected", "namespace": namespace},
        "spec": {"tasks": tasks},
    }
    with pytest.raises(ApiException) as info:
        JobStore(cluster).create(manifest)
    assert info.value.status == 422, case
    message = json.loads(info.value.body)["message"]
    assert field in message and words in message, f"{case}: {message}"
    assert JobStore(cluster).get(namespace, "rejected") is None
