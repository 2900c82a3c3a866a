"""Build DIJobs in Python: tasks from an image and a command, or from a full pod template.

from dihera import experiment as ex
job = ex.dijob("dqn", [ex.task("learner", image=IMG, command=["ditask", ...]),
                       ex.task("collector", replicas=4, image=IMG, command=[...],
                               failure_policy="DropReplica")],
               minReplicas=3, suspend=False)
job.to_manifest()          # the DIJob object
ex.workflow(job)           # the Hera Workflow, to inspect or compose
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hera.workflows import Workflow

from dihera.membership import Membership, plan_membership
from dihera.model import DIJob, EnvProvider, FailurePolicy, Task, TaskType
from dihera.render.settings import RenderSettings
from dihera.render.workflow import build_workflow
from dihera.schema import API_VERSION, KIND
from dihera.validation import load_job

__all__ = ["dijob", "env_provider", "task", "workflow"]


def task(
    type: TaskType | str = TaskType.NONE,
    *,
    name: str | None = None,
    replicas: int = 1,
    image: str | None = None,
    command: Sequence[str] | None = None,
    args: Sequence[str] | None = None,
    env: Mapping[str, str] | None = None,
    resources: Mapping[str, Any] | None = None,
    template: Mapping[str, Any] | None = None,
    env_provider: EnvProvider | str | None = None,
    failure_policy: FailurePolicy | str | None = None,
) -> dict[str, Any]:
    """One task entry (``spec.tasks[]``): give ``image`` (and ``command``...) or a whole pod ``template``.

    ``env_provider``: a framework's env for the task (``"torch"`` or :func:`env_provider`).
    ``failure_policy``: ``"FailJob"`` (default) or ``"DropReplica"`` (a replica that exhausted its
    retries leaves the job instead of failing it; docs/controller.md).
    """
    if (template is None) == (image is None):
        raise ValueError("task: give either image (with command, args, env, resources) or template, not both")
    if template is None:
        container: dict[str, Any] = {"name": "main", "image": image}
        if command:
            container["command"] = list(command)
        if args:
            container["args"] = list(args)
        if env:
            container["env"] = [{"name": k, "value": v} for k, v in env.items()]
        if resources:
            container["resources"] = dict(resources)
        template = {"spec": {"containers": [container], "restartPolicy": "Never"}}
    entry: dict[str, Any] = {"type": TaskType(type).value, "replicas": replicas, "template": dict(template)}
    if name is not None:
        entry["name"] = name
    if env_provider is not None:
        spec = EnvProvider(env_provider) if isinstance(env_provider, str) else env_provider
        entry["envProvider"] = spec.to_dict()
    if failure_policy is not None:
        entry["failurePolicy"] = FailurePolicy(failure_policy).value
    return entry


def env_provider(
    name: str, *, port: int | None = None, role: str | None = None, allow_scaling: bool = False
) -> EnvProvider:
    """``spec.tasks[].envProvider``: ``torch``, ``tensorflow`` or ``mxnet`` (docs/providers.md)."""
    return EnvProvider(name, port=port, role=role, allow_scaling=allow_scaling)


def dijob(
    name: str,
    tasks: Sequence[Mapping[str, Any] | Task],
    *,
    namespace: str = "default",
    labels: Mapping[str, str] | None = None,
    **spec: Any,
) -> DIJob:
    """A validated :class:`DIJob`; ``spec`` takes the camelCase spec fields (``backoffLimit=0``,
    ``successPolicy={...}``, ``suspend=True``...).

    Raises :class:`~dihera.errors.InvalidJobError` listing every problem.
    """
    entries = [t.to_dict() if isinstance(t, Task) else dict(t) for t in tasks]
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        metadata["labels"] = dict(labels)
    manifest = {"apiVersion": API_VERSION, "kind": KIND, "metadata": metadata, "spec": {**spec, "tasks": entries}}
    return load_job(manifest, source=f"DIJob {namespace}/{name}")


def workflow(job: DIJob, settings: RenderSettings | None = None, membership: Membership | None = None) -> Workflow:
    """The Hera ``Workflow`` that runs ``job``, to inspect, compose or render (``.to_yaml()``)."""
    return build_workflow(job, membership or plan_membership(job, None), settings or RenderSettings())
