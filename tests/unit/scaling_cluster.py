"""One running job in memory, behind every store of :mod:`dihera.scaling.ports` (the scaling use case's fakes).

Writes behave as the API server's: a JSON patch whose first operation (the precondition) names another
resourceVersion than the object's, or a ConfigMap replaced from an older version, loses the race
(``WriteConflict``); each write moves the version. ``writes`` logs every write and quota call in order;
``before_write[kind]`` runs once, right before the next write of that kind (a concurrent writer); a watch of the
Workflow finishes its tombstones, as Argo's next pass does.

Shared by test_scaling_executor.py and test_kube_scale_executor.py.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Generator, Mapping, Sequence
from typing import Any

import jsonpatch  # type: ignore[import-untyped]

from dihera import load_job
from dihera.constants import LABEL_JOB
from dihera.model import DIJob
from dihera.render import render
from dihera.render.objects import membership_configmap
from dihera.render.settings import RenderSettings
from dihera.scaling import retired_dag_tasks
from dihera.scaling.ports import WriteConflict
from tests.builders import PodBuilder, retry_node

__all__ = ["WORKFLOW_UID", "MemoryCluster", "MemoryQuota"]

WORKFLOW_UID = "wf-uid"
Obj = dict[str, Any]


class MemoryCluster:
    """Job ``manifest`` as started: its DIJob, rendered ConfigMap and Workflow, one Running pod per replica."""

    def __init__(self, manifest: Mapping[str, Any]) -> None:
        self._versions = itertools.count(1)
        job = load_job(manifest)
        rendered = render(job)
        self.namespace, self.name = job.namespace, job.name
        self.objects: dict[str, dict[str, Any]] = {
            "DIJob": copy.deepcopy(dict(manifest)),
            "ConfigMap": membership_configmap(job, rendered.membership, RenderSettings()),
            "Workflow": copy.deepcopy(rendered.workflow),
        }
        self.objects["Workflow"]["metadata"]["uid"] = WORKFLOW_UID
        for obj in self.objects.values():
            obj["metadata"]["resourceVersion"] = self._version()
        self.pods = [
            PodBuilder(f"pod-{r.task}-{r.index}")
            .uid(f"uid-{r.task}-{r.index}")
            .job(job.name)
            .host(f"{job.name}-{r.task}-{r.index}")
            .owner(WORKFLOW_UID)
            .phase("Running")
            .obj()
            for r in rendered.membership.replicas
        ]
        self.writes: list[str] = []
        #: kind -> the resourceVersions our writes gave it, in order
        self.written: dict[str, list[str]] = {}
        self.before_write: dict[str, Callable[[], object]] = {}
        self.watched_from: list[str] = []

    def _version(self) -> str:
        return str(next(self._versions))

    def _get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        obj = self.objects[kind]
        if (namespace, name) != (self.namespace, obj["metadata"]["name"]):
            return None
        return copy.deepcopy(obj)

    def _store(
        self, kind: str, read_version: str, change: Callable[[dict[str, Any]], dict[str, Any]]
    ) -> dict[str, Any]:
        """``kind`` as ``change`` leaves it, unless the object moved since ``read_version`` (a lost race)."""
        hook = self.before_write.pop(kind, None)
        if hook is not None:
            hook()
        if read_version != self.objects[kind]["metadata"]["resourceVersion"]:
            raise WriteConflict(f"{kind} moved since version {read_version}")
        new = change(copy.deepcopy(self.objects[kind]))
        new["metadata"]["resourceVersion"] = self._version()
        self.objects[kind] = new
        self.writes.append(kind)
        self.written.setdefault(kind, []).append(new["metadata"]["resourceVersion"])
        return copy.deepcopy(new)

    def _patch(self, kind: str, ops: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        first, *rest = ops
        assert first["path"] == "/metadata/resourceVersion", f"a {kind} patch without its precondition: {ops}"

        def change(current: dict[str, Any]) -> dict[str, Any]:
            patched: dict[str, Any] = jsonpatch.apply_patch(current, [dict(op) for op in rest])
            return patched

        return self._store(kind, str(first["value"]), change)

    def touch(self, kind: str) -> None:
        """Another writer changed ``kind`` (a status write): only its version moves."""
        self.objects[kind]["metadata"]["resourceVersion"] = self._version()

    # -- JobObjects -----------------------------------------------------------------------------------------

    def get_job(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._get("DIJob", namespace, name)

    def patch_job(self, namespace: str, name: str, ops: Sequence[Mapping[str, Any]]) -> None:
        self._patch("DIJob", ops)

    # -- MembershipStore ------------------------------------------------------------------------------------

    def get_configmap(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._get("ConfigMap", namespace, name)

    def replace_configmap(self, namespace: str, configmap: Mapping[str, Any]) -> None:
        new = copy.deepcopy(dict(configmap))
        self._store("ConfigMap", new["metadata"]["resourceVersion"], lambda _: new)

    # -- WorkflowStore --------------------------------------------------------------------------------------

    def get_workflow(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._get("Workflow", namespace, name)

    def patch_workflow(self, namespace: str, name: str, ops: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        return self._patch("Workflow", ops)

    # -- RetirementStore ------------------------------------------------------------------------------------

    def list_pods(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        assert selector == f"{LABEL_JOB}={self.name}", selector
        return copy.deepcopy(self.pods)

    def watch_workflow(
        self, namespace: str, name: str, after: str, seconds: float
    ) -> Generator[dict[str, Any], None, None]:
        """Argo's next pass: every tombstone's node Succeeded."""
        self.watched_from.append(after)
        workflow = self.objects["Workflow"]
        nodes = workflow.setdefault("status", {}).setdefault("nodes", {})
        for task in retired_dag_tasks(workflow):
            nodes[f"id-{task}"] = retry_node(f"{name}.{task}", "Succeeded")
        self.touch("Workflow")
        yield copy.deepcopy(workflow)

    def delete_pods(self, namespace: str, names: Sequence[str], uids: Mapping[str, str] | None = None) -> None:
        gone = set(names)
        named = [p["metadata"] for p in self.pods if p["metadata"]["name"] in gone]
        assert all((uids or {}).get(m["name"]) == m["uid"] for m in named), f"a deletion without its uid: {uids}"
        self.pods = [p for p in self.pods if p["metadata"]["name"] not in gone]
        self.writes.append(f"delete pods {sorted(gone)}")


class MemoryQuota:
    """A quota that admits everything and logs its calls into ``writes`` (a cluster's, to see the order)."""

    def __init__(self, writes: list[str]) -> None:
        self.writes = writes

    def admit(self, job: DIJob, before: Mapping[str, int], after: Mapping[str, int], generation: int) -> None:
        self.writes.append(f"admit generation {generation}")

    def release(self, job: DIJob, needed: Mapping[str, int]) -> None:
        self.writes.append(f"release to {dict(needed)}")
