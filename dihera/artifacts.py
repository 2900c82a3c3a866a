"""``spec.artifacts`` (docs/artifacts.md): what a task's replicas leave in Argo's artifact repository when they
end. Checked and defaulted here (pure); rendered as the replicas' output artifacts (dihera/render/workflow.py).

Its task defaults to the learner task, else the first task. The CRD checks the shapes and that a named task
exists (a CEL rule); this module also refuses a name used twice and Argo's own name for an archived log.

It also says where a stored object goes (:func:`key_prefix`). Argo's default key (the repository's
``keyFormat``, else ``{{workflow.name}}/{{pod.name}}``) names neither the namespace nor anything unique to the
object, and a DIJob's Workflow and its pods are named after the job: two same-named jobs in two namespaces,
or a job deleted and created again, would write the same objects. So every output artifact of a Workflow
dihera renders (DIJobs, sweeps, pipelines) carries its own key (Argo's "key-only" artifacts: the repository's
bucket and credentials, this key), ``dihera/<namespace>/<name>/<uid>/<pod>/...``, whatever the repository's
``keyFormat`` says.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import PurePosixPath

from dihera.constants import ARCHIVED_LOG_ARTIFACT, ARGO_MAIN_CONTAINER
from dihera.errors import Problem, format_value
from dihera.model import Artifact, TaskType

__all__ = [
    "KEY_ROOT",
    "POD_NAME",
    "WORKFLOW_UID",
    "archive_key",
    "artifact_problems",
    "file_key",
    "key_prefix",
    "parse_artifacts",
]

#: The first segment of every key dihera sets, apart from what Argo's own key format writes.
KEY_ROOT = "dihera"
#: Argo's variables, substituted in an artifact's key when the pod is made (a retry's pod has its own name).
POD_NAME = "{{pod.name}}"
WORKFLOW_UID = "{{workflow.uid}}"


def key_prefix(namespace: str, name: str, uid: str | None) -> str:
    """Where a pod of the Workflow ``namespace/name`` stores its outputs: ``dihera/<namespace>/<name>/<uid>/
    {{pod.name}}``. ``uid``: the owner's (a DIJob's ``metadata.uid``, which a Workflow rendered by the controller
    knows), else Argo's ``{{workflow.uid}}`` (a Workflow rendered from a file, a sweep's, a pipeline's: the
    Workflow is the owner). Namespace, name and uid are Kubernetes names, and a pod name is Argo's: no ``..``."""
    return "/".join((KEY_ROOT, namespace, name, uid or WORKFLOW_UID, POD_NAME))


def archive_key(prefix: str, artifact: str) -> str:
    """The key of an artifact stored as Argo's default archive (tar + gzip): ``<prefix>/<artifact>.tgz``, the
    file name Argo's own key format gives it."""
    return f"{prefix}/{artifact}.tgz"


def file_key(prefix: str, artifact: str, path: str) -> str:
    """The key of an artifact stored as it is (``archive: none``): ``<prefix>/<artifact>/<file name>``, so argo
    server serves it under its own name and type (the name of ``path``; the artifact's if that is empty, ``.``
    or ``..``)."""
    base = PurePosixPath(path).name
    return f"{prefix}/{artifact}/{base if base not in ('', '.', '..') else artifact}"


def _tasks(spec: Mapping[str, object]) -> list[Mapping[str, object]]:
    tasks = spec.get("tasks")
    return (
        [t for t in tasks if isinstance(t, Mapping) and isinstance(t.get("name"), str)]
        if isinstance(tasks, list)
        else []
    )


def _map(value: object) -> Mapping[str, object]:
    return value if isinstance(value, Mapping) else {}


def _list(value: object) -> list[object]:
    return value if isinstance(value, list) else []


def _items(spec: Mapping[str, object]) -> list[tuple[int, Mapping[str, object]]]:
    items = spec.get("artifacts")
    return [(i, a) for i, a in enumerate(items) if isinstance(a, Mapping)] if isinstance(items, list) else []


def default_task(spec: Mapping[str, object]) -> str | None:
    """The task of an artifact that names none: the learner task, else the first task."""
    tasks = _tasks(spec)
    names: list[str] = [str(t["name"]) for t in tasks if t.get("type") == TaskType.LEARNER]
    names = names or [str(t["name"]) for t in tasks]
    return names[0] if names else None


def _mount_paths(spec: Mapping[str, object], task: Mapping[str, object], checkpointed: list[str]) -> list[str] | None:
    """Where the task's first container mounts volumes (the checkpoint volume's too); None when a container
    is named main (Argo collects from that one, dihera adds nothing)."""
    containers = [
        c for c in _list(_map(_map(task.get("template")).get("spec")).get("containers")) if isinstance(c, Mapping)
    ]
    if not containers or any(c.get("name") == ARGO_MAIN_CONTAINER for c in containers):
        return None
    paths = [_map(v).get("mountPath") for v in _list(containers[0].get("volumeMounts"))]
    ckpt = spec.get("checkpoint")
    if task["name"] in checkpointed and isinstance(ckpt, Mapping):
        paths.append(ckpt.get("mountPath"))
    return [p for p in paths if isinstance(p, str)]


def _path_problem(i: int, path: object, task: str, mounts: list[str] | None) -> Problem | None:
    """An artifact's path must lie in a volume of its task's first container (docs/artifacts.md)."""
    if mounts is None or not isinstance(path, str) or not path.startswith("/"):
        return None
    if any(PurePosixPath(path).is_relative_to(m) for m in mounts):
        return None
    where = ", ".join(sorted(mounts)) or "none"
    why = (
        f"{format_value(path)} is not in a volume of task {task}'s first container, where Argo's executor can "
        f"collect it; mount a volume there (an emptyDir will do) or choose a path under one of its mounts: {where}"
    )
    return Problem(f"spec.artifacts[{i}].path", why)


def artifact_problems(spec: Mapping[str, object], checkpointed: list[str]) -> list[Problem]:
    """Every problem of a defaulted spec's ``artifacts``: a task that is not the job's, a name used twice or
    reserved by Argo, a path outside the task's volumes (``checkpointed``: the tasks mounting the checkpoint
    volume)."""
    tasks = {str(t["name"]): t for t in _tasks(spec)}  # names are strings (_tasks)
    fallback = default_task(spec)
    counts = Counter(a["name"] for _, a in _items(spec) if isinstance(a.get("name"), str))
    problems = []
    for i, a in _items(spec):
        task, name = a.get("task"), a.get("name")
        if isinstance(task, str) and task not in tasks:
            valid = ", ".join(tasks) or "no task has a name"
            why = f"{format_value(task)} is not a task of the job; valid: {valid}"
            problems.append(Problem(f"spec.artifacts[{i}].task", why))
        if name == ARCHIVED_LOG_ARTIFACT:
            why = f"{format_value(name)} is Argo's name for a pod's archived log; choose another name"
            problems.append(Problem(f"spec.artifacts[{i}].name", why))
        elif isinstance(name, str) and counts[name] > 1:
            why = f"{format_value(name)} is used by another artifact; names are unique"
            problems.append(Problem(f"spec.artifacts[{i}].name", why))
        owner = task if isinstance(task, str) else fallback
        if owner is not None and owner in tasks:
            problem = _path_problem(i, a.get("path"), owner, _mount_paths(spec, tasks[owner], checkpointed))
            problems += [problem] if problem else []
    return problems


def parse_artifacts(spec: Mapping[str, object]) -> tuple[Artifact, ...]:
    """The artifacts of a valid, defaulted spec, each with its task."""
    task = default_task(spec)
    return tuple(
        Artifact(name=str(a["name"]), path=str(a["path"]), task=str(a.get("task") or task or ""))
        for _, a in _items(spec)
    )
