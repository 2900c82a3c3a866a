"""A podless sweep (``runner="plugin"``) when its agent pod dies: no trial lost, none created twice.

workflows/python/kwok_plugin_sweep.py with 12 trials of 6 s, 4 at a time: the trials on kwok's nodes, the
Workflow's agent pod (Argo's agent and dihera's plugin sidecar) on the real node. Once the first trials run,
the agent pod is deleted: Argo creates another, whose plugin lists the sweep's DIJobs before it creates any,
so every trial's DIJob is created once, never more than 4 alive, and the sweep ends with all 12 trials.
"""

from __future__ import annotations

import runpy
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, watch

from ci.devcluster import realnode
from ci.devcluster.images import DIHERA_IMAGE, package_version
from ci.devcluster.settings import Settings
from dihera.kube.apply import apply_object
from dihera.schema import GROUP, PLURAL, VERSION
from dihera.sweeps.plugin import plugin_manifests
from dihera.sweeps.workflow import build_sweep_workflow
from tests.integration.conftest import Poll
from tests.integration.controllers import Controller

pytestmark = [pytest.mark.cluster, pytest.mark.realnode]

EXAMPLE = Path(__file__).resolve().parents[2] / "workflows" / "python" / "kwok_plugin_sweep.py"
ACCOUNT = "dijob-sweeper"
TRIALS, PARALLELISM = 12, 4
WORKFLOWS = ("argoproj.io", "v1alpha1")
#: The sweep's Role (docs/experiments.md): its summary reads the DIJobs (podless here: the plugin does).
RULES = [{"apiGroups": [GROUP], "resources": [PLURAL], "verbs": ["create", "get", "list", "watch", "patch"]}]


class Jobs:
    """Every DIJob of the namespace as a watch saw it: each uid's name, creation and end."""

    def __init__(self, api: client.ApiClient, namespace: str) -> None:
        self.names: dict[str, str] = {}  # uid -> name
        self.events: list[tuple[float, int]] = []  # (when, +1 created / -1 ended)
        self._ended: set[str] = set()
        self._stopped = False
        self._watch = watch.Watch()
        args = (client.CustomObjectsApi(api).list_namespaced_custom_object, GROUP, VERSION, namespace, PLURAL)
        self._thread = threading.Thread(target=self._run, args=args, daemon=True)
        self._thread.start()

    def _run(self, *args: Any) -> None:
        try:
            self._follow(*args)
        except Exception:
            if not self._stopped:  # a watch cut short before the test stopped it: its counts would be short
                raise

    def _follow(self, *args: Any) -> None:
        for event in self._watch.stream(*args, timeout_seconds=600):
            obj, now = event["object"], time.monotonic()
            uid = obj["metadata"]["uid"]
            if uid not in self.names:
                self.names[uid] = obj["metadata"]["name"]
                self.events.append((now, 1))
            if (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed") and uid not in self._ended:
                self._ended.add(uid)
                self.events.append((now, -1))

    def most_alive(self) -> int:
        live = most = 0
        for _, step in sorted(self.events):
            live += step
            most = max(most, live)
        return most

    def stop(self) -> None:
        self._stopped = True
        self._watch.stop()


def _setup(api: client.ApiClient, namespace: str, image: str) -> None:
    core, rbac = client.CoreV1Api(api), client.RbacAuthorizationV1Api(api)
    core.create_namespaced_service_account(namespace, {"metadata": {"name": ACCOUNT}})
    rbac.create_namespaced_role(namespace, {"metadata": {"name": ACCOUNT}, "rules": RULES})
    rbac.create_namespaced_role_binding(namespace, {
        "metadata": {"name": ACCOUNT},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": ACCOUNT},
        "subjects": [{"kind": "ServiceAccount", "name": ACCOUNT, "namespace": namespace}],
    })  # fmt: skip
    for obj in plugin_manifests(namespace, image, sweep_account=ACCOUNT):
        apply_object(api, obj, namespace)


def test_a_podless_sweep_loses_no_trial_and_doubles_none_when_its_agent_pod_is_deleted(
    cluster: client.ApiClient, namespace: str, controller: Controller, poll: Poll
) -> None:
    image = f"{DIHERA_IMAGE}:{package_version(Settings.from_environ())}"
    _setup(cluster, namespace, image)
    key, value = realnode.NODE_LABEL
    placement = {"nodeSelector": {key: value}, "tolerations": [realnode.NODE_TAINT]}
    sweep = runpy.run_path(str(EXAMPLE))["build"](namespace, image, TRIALS, PARALLELISM, 6, "plugin", placement)
    custom, core = client.CustomObjectsApi(cluster), client.CoreV1Api(cluster)
    jobs = Jobs(cluster, namespace)
    body = build_sweep_workflow(sweep).to_dict()
    wf = custom.create_namespaced_custom_object(*WORKFLOWS, namespace, "workflows", body)

    def agent() -> Any:
        pods = core.list_namespaced_pod(namespace, label_selector="workflows.argoproj.io/component=agent").items
        running = [p for p in pods if p.status.phase == "Running" and not p.metadata.deletion_timestamp]
        return running[0] if running and len(jobs.names) >= PARALLELISM else None

    first = poll(agent, 120, f"the agent pod running and {PARALLELISM} trials created")
    core.delete_namespaced_pod(first.metadata.name, namespace, grace_period_seconds=0)

    def another() -> Any:
        pod = agent()
        return pod if pod is not None and pod.metadata.uid != first.metadata.uid else None

    poll(another, 60, "another agent pod running")

    def ended() -> dict[str, Any] | None:
        got = custom.get_namespaced_custom_object(*WORKFLOWS, namespace, "workflows", sweep.name)
        return got if (got.get("status") or {}).get("phase") in ("Succeeded", "Failed", "Error") else None

    done = poll(ended, 300, "the sweep's Workflow ended")
    jobs.stop()
    nodes = done["status"]["nodes"].values()
    failed = [(n["displayName"], n.get("message")) for n in nodes if n["phase"] != "Succeeded"]
    assert done["status"]["phase"] == "Succeeded", f"Workflow {done['status']['phase']}; nodes not Succeeded: {failed}"
    trial_nodes = [n for n in nodes if n.get("templateName") == "trial"]
    assert len(trial_nodes) == TRIALS
    assert sorted(jobs.names.values()) == [sweep.trial_name(i) for i in range(TRIALS)], "a trial's DIJob twice"
    assert jobs.most_alive() <= PARALLELISM
    (summary,) = [n for n in nodes if n.get("templateName") == "summary"]
    csv = next(p["value"] for p in summary["outputs"]["parameters"] if p["name"] == "results-csv")
    assert csv.strip().count("\n") == TRIALS
    # deleting the experiment deletes its trials (their owner: the Workflow)
    items = custom.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)["items"]
    owners = {r["uid"] for j in items for r in j["metadata"].get("ownerReferences") or []}
    assert len(items) == TRIALS and owners == {wf["metadata"]["uid"]}
    custom.delete_namespaced_custom_object(*WORKFLOWS, namespace, "workflows", sweep.name)

    def gone() -> bool | None:
        return not custom.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)["items"] or None

    poll(gone, 120, "the trials' DIJobs deleted with their Workflow")
