"""Podless trials: the sweep's executor plugin, which creates the trials' DIJobs itself (pure).

With ``Sweep.runner == Runner.PLUGIN`` a trial node is an Argo **plugin** template, not a pod: Argo's agent
pod (one per Workflow) asks the plugin sidecar ``dihera-trials`` (``dihera experiment trial-plugin``) to
execute each trial node and asks again after the ``requeue`` it answers. The plugin keeps at most
``parallelism`` of the Workflow's trials alive and creates the next trial's DIJob as soon as its watch sees
one end, as a plain script would; Argo's nodes report what the plugin last said (Pending while a trial
waits for a slot, Running, then Succeeded or Failed with the trial's phase and metric as output parameters).

Why: a resource template costs a pod per trial (init and main containers, an executor with API discovery,
task results), about 10 s a trial on a 2-core node (docs/benchmarks.md); Argo does not throttle plugin
nodes by a DAG's ``parallelism`` (it counts pods), so the plugin bounds the trials itself.

This module decides; :mod:`dihera.cli.trial_plugin` serves it and talks to the cluster. What a cluster needs
(Argo's ``ARGO_EXECUTOR_PLUGINS=true``; the plugin's ConfigMap, ServiceAccount and Role in the sweep's
namespace; Argo's agent rules for the sweep's ServiceAccount) is :func:`plugin_manifests`, and
``dihera experiment plugin-manifests`` prints it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from dihera.constants import LABEL_EXPERIMENT, MANAGED_BY
from dihera.schema import GROUP, PLURAL
from dihera.shapes.dijob import DIJobObject, DIJobStatus, as_dijob

__all__ = [
    "AGENT_RULES",
    "ENDED",
    "PLUGIN_NAME",
    "PLUGIN_PORT",
    "PluginRequestError",
    "SummaryRequest",
    "TrialRefused",
    "TrialRequest",
    "Trials",
    "plugin_manifests",
    "service_account_token",
]

#: The plugin's name: the key of a trial template's ``plugin`` object and its ConfigMap ``<name>-executor-plugin``.
PLUGIN_NAME = "dihera-trials"
#: Where the sidecar listens in the agent pod (Argo's agent calls ``http://localhost:<port>``).
PLUGIN_PORT = 14356
#: How soon Argo's agent asks again about a trial that runs or waits for a slot. A slot is filled by the
#: plugin when its watch sees a trial end, not on a requeue: this only bounds how late a node shows it.
REQUEUE_RUNNING = "1s"
REQUEUE_QUEUED = "5s"
ENDED = ("Succeeded", "Failed", "Suspended")
#: What Argo's agent (the sweep's ServiceAccount) needs: its WorkflowTaskSet (Argo's quick-start agent role).
AGENT_RULES: list[dict[str, object]] = [
    {"apiGroups": ["argoproj.io"], "resources": ["workflowtasksets"], "verbs": ["list", "watch"]},
    {"apiGroups": ["argoproj.io"], "resources": ["workflowtasksets/status"], "verbs": ["patch"]},
]
#: What the plugin does with DIJobs: creates the trials, watches them.
PLUGIN_RULES: list[dict[str, object]] = [
    {"apiGroups": [GROUP], "resources": [PLURAL], "verbs": ["create", "get", "list", "watch"]},
]


class PluginRequestError(ValueError):
    """A trial template the plugin cannot run (its node fails with this message; not worth retrying)."""


class TrialRefused(Exception):
    """The API server refused a trial's DIJob (invalid, forbidden): its node fails, not worth retrying. Any other
    error of ``create`` (an outage) leaves the trial waiting for the next chance."""


def _workflow_meta(body: Mapping[str, Any]) -> dict[str, str]:
    meta = (body.get("workflow") or {}).get("metadata") or {}
    for key in ("name", "namespace", "uid"):
        if not meta.get(key):
            raise PluginRequestError(f"workflow.metadata.{key}: missing in the agent's request")
    return {k: str(meta[k]) for k in ("name", "namespace", "uid")}


def _spec(body: Mapping[str, Any]) -> Any:
    return ((body.get("template") or {}).get("plugin") or {}).get(PLUGIN_NAME)


@dataclass(frozen=True)
class SummaryRequest:
    """The ``summary`` node of a plugin sweep without artifacts: the results from the plugin's watch, no pod."""

    namespace: str
    workflow_uid: str
    experiment: str
    metric: str
    goal: str

    @classmethod
    def parse(cls, body: Mapping[str, object]) -> SummaryRequest | None:
        spec = _spec(body)
        if not isinstance(spec, dict) or "summary" not in spec:
            return None
        summary, meta = spec["summary"] or {}, _workflow_meta(body)
        for key in ("experiment", "metric", "goal"):
            if not summary.get(key):
                raise PluginRequestError(f"template.plugin.{PLUGIN_NAME}.summary.{key}: missing")
        return cls(meta["namespace"], meta["uid"], summary["experiment"], summary["metric"], summary["goal"])


@dataclass(frozen=True)
class TrialRequest:
    """One ``template.execute`` call for a trial node: the Workflow and the trial's DIJob."""

    namespace: str
    workflow: str
    workflow_uid: str
    manifest: DIJobObject
    parallelism: int
    metric: str
    index: int

    @property
    def job(self) -> str:
        return str(self.manifest["metadata"]["name"])

    @property
    def experiment(self) -> str:
        return str((self.manifest["metadata"].get("labels") or {}).get(LABEL_EXPERIMENT, ""))

    @classmethod
    def parse(cls, body: Mapping[str, object]) -> TrialRequest | None:
        """The request's trial; None when the template is not this plugin's (another plugin's to answer) or is
        the summary's (:class:`SummaryRequest`)."""
        spec = _spec(body)
        if spec is None or (isinstance(spec, dict) and "summary" in spec):
            return None
        meta = _workflow_meta(body)
        manifest = spec.get("manifest")
        if not isinstance(manifest, dict) or not (manifest.get("metadata") or {}).get("name"):
            raise PluginRequestError(
                f"template.plugin.{PLUGIN_NAME}.manifest: not a DIJob with a name: {manifest!r:.200}"
            )
        try:
            parallelism, index = int(spec.get("parallelism", 0)), int(spec.get("index", -1))
        except (TypeError, ValueError) as err:
            what = f"template.plugin.{PLUGIN_NAME}: parallelism and index must be integers ({err})"
            raise PluginRequestError(what) from None
        if parallelism < 1 or index < 0:
            raise PluginRequestError(
                f"template.plugin.{PLUGIN_NAME}: parallelism {parallelism} must be >= 1 and index {index} >= 0"
            )
        manifest = {**manifest, "metadata": {**manifest["metadata"], "namespace": meta["namespace"]}}
        manifest["metadata"]["ownerReferences"] = [
            {
                "apiVersion": "argoproj.io/v1alpha1",
                "kind": "Workflow",
                "name": meta["name"],
                "uid": meta["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
        return cls(
            namespace=meta["namespace"],
            workflow=meta["name"],
            workflow_uid=meta["uid"],
            manifest=as_dijob(manifest),
            parallelism=parallelism,
            metric=str(spec.get("metric", "")),
            index=index,
        )


def _phase(job: DIJobObject | None) -> str | None:
    """The DIJob's ``status.phase``; None without a job or a phase."""
    return (job.get("status") or {}).get("phase") if job is not None else None


def _owned_by(obj: DIJobObject, uid: str) -> bool:
    return any(ref.get("uid") == uid for ref in obj.get("metadata", {}).get("ownerReferences") or [])


def _node(
    phase: str, message: str, requeue: str | None = None, outputs: Mapping[str, str] | None = None
) -> dict[str, object]:
    node: dict[str, object] = {"phase": phase, "message": message}
    if outputs is not None:
        node["outputs"] = {"parameters": [{"name": k, "value": v} for k, v in outputs.items()]}
    reply: dict[str, object] = {"node": node}
    if requeue is not None:
        reply["requeue"] = requeue
    return reply


class Trials:
    """The trials of one Workflow (an agent pod serves one): which DIJobs exist, which wait for a slot.

    ``create(manifest)`` creates a DIJob (an existing one of the name is fine: the plugin restarted); it is
    called with the lock held, so two calls never race for one slot. The watch reports every DIJob of the
    sweep (:meth:`seen`, :meth:`gone`) and says when its first listing is in (:meth:`synced`): before that no
    trial is created, so a restarted plugin does not create a trial it created before.
    """

    def __init__(self, create: Callable[[DIJobObject], None]) -> None:
        self._create = create
        self._lock = threading.Lock()
        self._synced = False
        self._uid: str | None = None
        self._jobs: dict[str, DIJobObject] = {}  # name -> the DIJob as the watch last saw it
        self._queued: dict[str, TrialRequest] = {}  # name -> request, waiting for a slot
        self._started: set[str] = set()  # created here (the watch may not have seen them yet)
        self._deleted: set[str] = set()  # created here, then deleted (by hand): ended, Failed
        self._parallelism = 1
        self.errors: dict[str, str] = {}  # name -> why the API server refused its DIJob
        self.retrying: dict[str, str] = {}  # name -> why its last creation failed (to be tried again)

    def synced(self) -> None:
        with self._lock:
            self._synced = True
            self._fill()

    def seen(self, obj: Mapping[str, object]) -> None:
        with self._lock:
            job = as_dijob(dict(obj))
            self._jobs[job["metadata"]["name"]] = job
            if _phase(job) in ENDED:
                self._fill()

    def gone(self, obj: Mapping[str, object]) -> None:
        with self._lock:
            name = as_dijob(obj)["metadata"]["name"]
            if self._jobs.pop(name, None) is not None and name in self._started:
                self._deleted.add(name)
            self._fill()

    def owned(self, uid: str) -> list[DIJobObject] | None:
        """The DIJobs Workflow ``uid`` owns, as the watch last saw them; None before its first listing."""
        with self._lock:
            if not self._synced:
                return None
            return [as_dijob(dict(j)) for j in self._jobs.values() if _owned_by(j, uid)]

    def live(self) -> int:
        """Trials created and not ended (this Workflow's)."""
        with self._lock:
            return self._live()

    def _ours(self, name: str) -> DIJobObject | None:
        job = self._jobs.get(name)
        return job if job is not None and self._uid is not None and _owned_by(job, self._uid) else None

    def _live(self) -> int:
        names = (self._started - self._deleted) | {n for n in self._jobs if self._ours(n) is not None}
        return sum(1 for n in names if _phase(self._ours(n)) not in ENDED)

    def _fill(self) -> None:
        if not self._synced:
            return
        free = self._parallelism - self._live()
        for name in sorted(self._queued, key=lambda n: self._queued[n].index):
            if free <= 0:
                break
            request = self._queued[name]
            try:
                self._create(request.manifest)
            except TrialRefused as err:  # the node fails with why
                del self._queued[name]
                self.errors[name] = str(err)[:500]
                continue
            except Exception as err:  # worth retrying: it stays queued, its next call or a trial's end tries again
                self.retrying[name] = f"{type(err).__name__}: {str(err)[:300]}"
                break
            del self._queued[name]
            self.retrying.pop(name, None)
            self._started.add(name)
            free -= 1

    def execute(self, request: TrialRequest) -> dict[str, object]:
        """The reply to Argo's agent about ``request``'s trial (and, if a slot is free, its DIJob created)."""
        with self._lock:
            self._uid = self._uid or request.workflow_uid
            self._parallelism = request.parallelism
            name = request.job
            if name in self.errors:
                return _node("Failed", f"DIJob {name} was not created: {self.errors[name]}")
            job = self._ours(name)
            if job is None and name not in self._started:
                self._queued.setdefault(name, request)
                self._fill()
                if name in self.errors:
                    return _node("Failed", f"DIJob {name} was not created: {self.errors[name]}")
                if name not in self._started:
                    # the same text at every call: a node whose message changes is a write of the whole Workflow
                    waiting = f"waiting for one of the {request.parallelism} slots"
                    if not self._synced:
                        waiting = "waiting for the plugin's watch of the sweep's DIJobs (its first listing)"
                    if name in self.retrying:
                        waiting = f"creating DIJob {name} failed, trying again: {self.retrying[name]}"
                    return _node("Pending", waiting, REQUEUE_QUEUED)
            if job is None and name in self._deleted:
                return _node("Failed", f"DIJob {name} was deleted before it ended", outputs={"phase": "Deleted"})
            return self._report(name, job, request.metric)

    def _report(self, name: str, job: DIJobObject | None, metric: str) -> dict[str, object]:
        status: DIJobStatus = (job.get("status") or {}) if job is not None else {}
        phase = status.get("phase") or ""
        if job is None or phase not in ENDED:  # one message while it runs (each change writes the Workflow)
            return _node("Running", f"DIJob {name} is running", REQUEUE_RUNNING)
        value = (status.get("profilings") or {}).get(metric) if metric else None
        outputs = {"phase": phase, **({metric: "" if value is None else str(value)} if metric else {})}
        raw: Mapping[str, object] = status  # "message" is no status field: always the default (kept as it was)
        message = raw.get("message") or f"DIJob {name} {phase}"
        return _node("Succeeded" if phase == "Succeeded" else "Failed", str(message)[:500], outputs=outputs)


def service_account_token(namespace: str, account: str) -> dict[str, object]:
    """The token Secret Argo mounts in its agent pod for ``account`` (``<account>.service-account-token``:
    the agent pod does not automount one); Kubernetes' token controller fills it."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/service-account-token",
        "metadata": {
            "name": f"{account}.service-account-token",
            "namespace": namespace,
            "labels": dict(MANAGED_BY),
            "annotations": {"kubernetes.io/service-account.name": account},
        },
    }


def _sidecar(image: str) -> dict[str, object]:
    return {
        "name": PLUGIN_NAME,
        "image": image,
        "command": ["dihera", "experiment", "trial-plugin", "--port", str(PLUGIN_PORT)],
        "ports": [{"containerPort": PLUGIN_PORT}],
        # a CPU to start quickly (Python's imports) and answer the agent's calls at once
        "resources": {"requests": {"cpu": "50m", "memory": "96Mi"}, "limits": {"cpu": "1", "memory": "256Mi"}},
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
    }


def plugin_manifests(namespace: str, image: str, sweep_account: str | None = None) -> list[dict[str, object]]:
    """What a namespace needs for ``Runner.PLUGIN`` sweeps: the plugin's ConfigMap (Argo adds its sidecar, in
    ``image``, dihera's, to every agent pod of the namespace), its ServiceAccount with its token and a Role to
    create and watch DIJobs; with ``sweep_account``, the sweep's ServiceAccount's token and Argo's agent Role."""
    account = f"{PLUGIN_NAME}-executor-plugin"
    labels = dict(MANAGED_BY)
    meta = {"namespace": namespace, "labels": labels}
    docs: list[dict[str, object]] = [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": account,
                **meta,
                "labels": {**labels, "workflows.argoproj.io/configmap-type": "ExecutorPlugin"},
            },
            "data": {
                "sidecar.automountServiceAccountToken": "true",
                "sidecar.container": yaml.safe_dump(_sidecar(image), sort_keys=True),
            },
        },
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": account, **meta}},
        service_account_token(namespace, account),
        *_role(namespace, account, account, PLUGIN_RULES),
    ]
    if sweep_account is not None:
        docs += [service_account_token(namespace, sweep_account)]
        docs += _role(namespace, f"{sweep_account}-argo-agent", sweep_account, AGENT_RULES)
    return docs


def _role(namespace: str, name: str, account: str, rules: list[dict[str, object]]) -> list[dict[str, object]]:
    meta = {"name": name, "namespace": namespace, "labels": dict(MANAGED_BY)}
    return [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta, "rules": rules},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": meta,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
        },
    ]
