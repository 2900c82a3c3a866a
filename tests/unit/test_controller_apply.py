"""The controller's writes after the status (dihera/controller/apply.py): it deletes the pods a scale-down left,
once Argo finished their tombstones, never twice."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from dihera.controller.apply import Applier
from dihera.controller.metrics import Metrics
from dihera.render import RenderSettings
from dihera.validation import load_job
from tests.unit.builders import job, task

JOB = load_job({**job(task("collector", replicas=1), name="j"), "metadata": {"name": "j", "namespace": "ns"}})
WORKFLOW = {
    "metadata": {"name": "j"},
    "spec": {
        "templates": [
            {
                "name": "dijob",
                "dag": {
                    "tasks": [
                        {"name": "collector-0", "template": "collector"},
                        {"name": "collector-1", "template": "dihera-retired"},
                    ]
                },
            }
        ]
    },
    "status": {"nodes": {"r": {"name": "j.collector-1", "type": "Retry", "phase": "Succeeded"}}},
}


def pod(host: str, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": f"pod-{host}", "labels": {"diengine/pod": f"j-{host}"}}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta, "status": {"phase": "Running"}}


class Objects:
    def __init__(self) -> None:
        self.deleted: list[str] = []

    def delete_pods(self, namespace: str, names: Sequence[str]) -> None:
        self.deleted += names


def applier(objects: Objects) -> Applier:
    nothing = cast(Any, None)  # no DIJob, Event or scaler call is made
    return Applier(nothing, cast(Any, objects), nothing, nothing, Metrics(), RenderSettings())


CACHED = [pod("collector-0"), pod("collector-1")]  # the cache still shows the retired replica's pod alive


def run(live: list[dict[str, Any]] | None) -> tuple[list[str], int]:
    objects, lists = Objects(), []

    def live_pods() -> list[dict[str, Any]]:
        lists.append(1)
        return live or []

    reads = None if live is None else live_pods
    applier(objects).delete_retired_pods(JOB, WORKFLOW, CACHED, {}, reads)
    return objects.deleted, len(lists)


def test_a_pod_the_cache_shows_alive_is_deleted_once_the_api_server_confirms_it() -> None:
    assert run([pod("collector-0"), pod("collector-1")]) == (["pod-collector-1"], 1)


def test_a_pod_the_scaler_deleted_already_is_not_deleted_again() -> None:
    assert run([pod("collector-0"), pod("collector-1", deleting=True)]) == ([], 1)
    assert run([pod("collector-0")]) == ([], 1)


def test_without_a_cache_the_pods_read_are_live_already() -> None:
    assert run(None) == (["pod-collector-1"], 0)


def test_nothing_to_delete_asks_nothing_of_the_api_server() -> None:
    objects, asked = Objects(), []

    def live_pods() -> list[dict[str, Any]]:
        asked.append(1)
        return CACHED

    applier(objects).delete_retired_pods(JOB, WORKFLOW, [pod("collector-0")], {}, live_pods)
    assert objects.deleted == [] and asked == []
