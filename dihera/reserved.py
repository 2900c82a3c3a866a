"""What dihera adds to every replica's pod, which a task's template may not take (pure).

The renderer (dihera/render/workflow.py) puts its own variables ahead of every container's and init
container's ``env`` (the ``DI_*`` ones of dihera/render/env.py, then the task's env provider's) and drops
a user's entry of the same name; it adds the job's ``spec.volumes`` and its own volumes (the membership
ConfigMap's, the checkpoint claim's) beside the template's, and mounts the membership at
``RenderSettings.membership_dir``. A template taking one of these names would run with a value it did
not ask for while ``validate`` said valid, or render into a pod the API server refuses (two volumes of
one name, two mounts at one path): validation refuses it instead, naming the field. DI-orchestrator
set the same ``DI_*`` variables itself; none of its published samples sets one.

:data:`REPLICA_ENV` and :data:`PROVIDER_ENV` list the names the renderer sets; a unit test renders a job
with every kind of variable and checks that they are exactly the names rendered.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from dihera.constants import CHECKPOINT_DIR_ENV, MEMBERSHIP_VOLUME
from dihera.errors import Problem, format_value
from dihera.model import task_env_name
from dihera.render.env import GENERATION_KEY, NODES_KEY, RESTART_KEY, SERVER_CA_KEY
from dihera.render.settings import RenderSettings

__all__ = ["MEMBERSHIP_MOUNT", "PROVIDER_ENV", "REPLICA_ENV", "reserved_env", "reserved_problems"]

#: The variables dihera sets on every container and init container of every replica (``DI_SERVER_CA`` only
#: when the controller knows the di-server's CA: reserved always, a job does not know where it will run).
REPLICA_ENV: tuple[str, ...] = (
    "DI_JOB_ID",
    "DI_SERVER_URL",
    SERVER_CA_KEY,
    "DI_RANK",
    "DI_TASK_NAME",
    "DI_TASK_TYPE",
    "DI_TASK_RANK",
    "DI_FQDN",
    NODES_KEY,
    GENERATION_KEY,
    "DI_MEMBERSHIP_FILE",
    RESTART_KEY,
)
#: The variables each env provider sets on its task's containers (docs/providers.md).
PROVIDER_ENV: Mapping[str, tuple[str, ...]] = {
    "torch": ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK"),
    "tensorflow": ("DI_TF_CLUSTER", "TF_CONFIG"),
    "mxnet": ("DMLC_ROLE", "DMLC_PS_ROOT_URI", "DMLC_PS_ROOT_PORT", "DMLC_NUM_SERVER", "DMLC_NUM_WORKER"),
}
#: Where every container and init container sees the membership ConfigMap.
MEMBERSHIP_MOUNT = RenderSettings.membership_dir
_CONTAINER_KEYS = ("initContainers", "containers")


def _obj(value: object) -> Mapping[str, object]:
    return value if isinstance(value, Mapping) else {}


def _arr(value: object) -> list[object]:
    return value if isinstance(value, list) else []


def reserved_env(tasks: Sequence[object], task: Mapping[str, object], checkpoint: bool) -> dict[str, str]:
    """Each variable the renderer sets on ``task``'s containers (of the defaulted ``tasks``), and who sets it;
    ``checkpoint``: the task mounts the checkpoint volume."""
    names = {name: "set by dihera on every replica (docs/rendering.md)" for name in REPLICA_ENV}
    for other in tasks:
        if isinstance(other, Mapping) and isinstance(other.get("name"), str):
            names[task_env_name(other["name"])] = f"set by dihera to the addresses of task {other['name']!r}"
    if checkpoint:
        names[CHECKPOINT_DIR_ENV] = "set by dihera to the replica's directory in the checkpoint volume"
    provider = _obj(task.get("envProvider")).get("name")
    for name in PROVIDER_ENV.get(provider, ()) if isinstance(provider, str) else ():
        names[name] = f"set by the task's {provider} envProvider (docs/providers.md)"
    return names


def _env_problems(pod: Mapping[str, object], where: str, reserved: Mapping[str, str]) -> list[Problem]:
    return [
        Problem(
            f"{where}.{kind}[{j}].env[{k}].name",
            f"{format_value(var['name'])} is {reserved[var['name']]}, ahead of the container's own variables: "
            f"an entry of that name would be dropped; choose another name (a value may refer to it: $({var['name']}))",
        )
        for kind in _CONTAINER_KEYS
        for j, c in enumerate(_arr(pod.get(kind)))
        for k, var in enumerate(_arr(_obj(c).get("env")))
        if isinstance(var, Mapping) and isinstance(var.get("name"), str) and var["name"] in reserved
    ]


def _mount_problems(pod: Mapping[str, object], where: str) -> list[Problem]:
    why = f"is where dihera mounts the membership ConfigMap ({MEMBERSHIP_VOLUME}) in each container; use another path"
    return [
        Problem(f"{where}.{kind}[{j}].volumeMounts[{k}].mountPath", f"{format_value(path)} {why}")
        for kind in _CONTAINER_KEYS
        for j, c in enumerate(_arr(pod.get(kind)))
        for k, mount in enumerate(_arr(_obj(c).get("volumeMounts")))
        if isinstance(path := _obj(mount).get("mountPath"), str) and path.rstrip("/") == MEMBERSHIP_MOUNT
    ]


def _volume_problems(volumes: list[object], where: str, job_volumes: Mapping[str, int] | None) -> list[Problem]:
    """A template's volume names: not dihera's, not a job volume's (``job_volumes``: name -> index), unique.
    ``job_volumes`` None: these are the job's volumes (validation checks that they are unique)."""
    problems: list[Problem] = []
    seen: dict[str, int] = {}
    for j, v in enumerate(volumes):
        name = _obj(v).get("name")
        if not isinstance(name, str):
            continue
        path = f"{where}[{j}].name"
        if name == MEMBERSHIP_VOLUME:
            why = "is the membership ConfigMap's volume, which dihera adds to every replica's pod"
            problems.append(Problem(path, f"{name!r} {why}; choose another name"))
        elif job_volumes is not None and name in job_volumes:
            problems.append(
                Problem(
                    path,
                    f"{name!r} is also the name of spec.volumes[{job_volumes[name]}], which dihera adds to every "
                    "task's pod; choose another name (or use the job's volume)",
                )
            )
        elif job_volumes is not None and name in seen:
            problems.append(Problem(path, f"{name!r} is already the name of {where}[{seen[name]}]"))
        seen.setdefault(name, j)
    return problems


def reserved_problems(spec: Mapping[str, object], checkpoint_tasks: Sequence[str]) -> list[Problem]:
    """Every env entry, volume and mount path of a defaulted spec's templates that takes one dihera adds;
    ``checkpoint_tasks``: the tasks that mount the checkpoint volume (its name is checked with it)."""
    tasks = _arr(spec.get("tasks"))
    job_volumes: dict[str, int] = {}
    for k, v in enumerate(_arr(spec.get("volumes"))):
        if isinstance(name := _obj(v).get("name"), str):
            job_volumes.setdefault(name, k)
    problems = _volume_problems(_arr(spec.get("volumes")), "spec.volumes", None)
    for i, task in enumerate(tasks):
        if not isinstance(task, Mapping):
            continue
        pod, where = _obj(_obj(task.get("template")).get("spec")), f"spec.tasks[{i}].template.spec"
        reserved = reserved_env(tasks, task, task.get("name") in checkpoint_tasks)
        problems += _env_problems(pod, where, reserved) + _mount_problems(pod, where)
        problems += _volume_problems(_arr(pod.get("volumes")), f"{where}.volumes", job_volumes)
    return problems
