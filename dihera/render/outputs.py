"""``spec.artifacts`` in a task's template (pure; docs/artifacts.md): the replica's output artifacts and, when
none of its containers is named ``main``, the container that lets Argo's executor collect them.

Argo's executor saves a template's outputs from its container named ``main`` only (in a container set, the
others' files are not its business). A DIJob's containers keep their names (``di-container`` in
DI-orchestrator's examples), so a task with artifacts gets one more container, ``main``: it starts once the
first container has ended (the set's ``dependencies``), mounts what the first container mounted, and does
nothing; Argo's emissary in it then tars each artifact's path from those volumes. A path must therefore lie
in a volume of the first container (validated), as DI-engine's experiment directory does in the examples.

Each artifact carries its key (:func:`dihera.artifacts.key_prefix`): ``dihera/<namespace>/<job>/<job uid>/
<pod>/<artifact>.tgz``, so no artifact repository's ``keyFormat`` can make two jobs' objects collide.
"""

from __future__ import annotations

from typing import Any

from hera.workflows import models as m

from dihera.artifacts import archive_key, key_prefix
from dihera.constants import ARGO_MAIN_CONTAINER
from dihera.model import DIJob, Task
from dihera.render.peer_wait import NONROOT_UID
from dihera.render.settings import RenderSettings

__all__ = ["COLLECTOR_RESOURCES", "artifact_collector", "job_key_prefix", "outputs"]

#: The collector's resources. It runs nothing itself, but Argo's emissary in it tars and gzips every artifact
#: into the pod's shared volume when the first container has ended (cmd/argoexec/commands/emissary.go): a policy
#: of a big model is tens of MB, whose written pages count against the container's memory: room for that beyond
#: the peer wait's 64Mi (no failure was traced to it); requests stay small.
COLLECTOR_RESOURCES = {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"cpu": "1", "memory": "512Mi"}}


def job_key_prefix(job: DIJob) -> str:
    """Where the job's pods store their artifacts: ``dihera/<namespace>/<job>/<uid>/{{pod.name}}``, the
    DIJob's uid when it has one (the controller renders the live object), else the Workflow's (``dihera render``
    of a file; the controller never creates a second Workflow for one DIJob)."""
    return key_prefix(job.namespace, job.name, job.uid)


def outputs(job: DIJob, task: Task) -> m.Outputs | None:
    """The task's artifacts as its replicas' output artifacts, optional (a replica that ends before writing
    one is not failed for it), each at its own key in the cluster's artifact repository (Argo's key-only
    artifacts: the repository's bucket and credentials)."""
    prefix = job_key_prefix(job)
    kept = [
        m.Artifact(name=a.name, path=a.path, optional=True, s3=m.S3Artifact(key=archive_key(prefix, a.name)))
        for a in job.artifacts
        if a.task == task.name
    ]
    return m.Outputs(artifacts=kept) if kept else None


def artifact_collector(
    job: DIJob, task: Task, containers: list[dict[str, Any]], settings: RenderSettings
) -> dict[str, Any] | None:
    """The ``main`` container of a task with artifacts whose containers have no ``main``; None otherwise."""
    if not any(a.task == task.name for a in job.artifacts):
        return None
    if any(c.get("name") == ARGO_MAIN_CONTAINER for c in containers):
        return None
    first = containers[0]
    return {
        "name": ARGO_MAIN_CONTAINER,
        "image": settings.peer_wait_image,
        "imagePullPolicy": settings.peer_wait_image_pull_policy,
        "command": ["true"],
        "dependencies": [first["name"]],
        "volumeMounts": [{**v, "readOnly": True} for v in first.get("volumeMounts", [])],
        "resources": COLLECTOR_RESOURCES,
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": NONROOT_UID,
            "runAsGroup": NONROOT_UID,
            "readOnlyRootFilesystem": True,
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        },
    }
