"""Validate a DIJob and build the typed :class:`~dihera.model.DIJob` (pure).

The same rules run at admission as CEL ``x-kubernetes-validations`` in the CRD; here they report
**all** problems at once, each naming the field path, the bad value and what would be valid.
Input is strict: a field the schema does not know (``spec.backofflimit``, ``tasks[].replica``, a
misspelt pod template field) is an error naming the nearest valid field, as ``kubectl apply
--validate=strict`` does at the API server.
"""

from __future__ import annotations

import copy
import re
from collections import Counter
from collections.abc import Mapping
from functools import cache
from typing import Any

import jsonschema

from dihera.artifacts import artifact_problems, parse_artifacts
from dihera.constants import (
    ANNOTATION_FINISH_GRACE,
    ANNOTATION_PEER_WAIT_TIMEOUT,
    CHECKPOINT_VOLUME,
    PEER_WAIT_CONTAINER,
)
from dihera.env_limits import env_size_problems
from dihera.errors import InvalidJobError, Problem, format_value
from dihera.model import (
    Checkpoint,
    CleanPodPolicy,
    DIJob,
    FailurePolicy,
    Priority,
    ReclaimPolicy,
    SuccessOperator,
    SuccessPolicy,
    Task,
    TaskType,
)
from dihera.naming import SHORT_TEMPLATE_SUFFIX
from dihera.node_ids import none_before_ditask_problems
from dihera.podtemplate import check_pod_template, check_volume, without_nulls
from dihera.render.providers import parse_env_provider, provider_problems
from dihera.reserved import reserved_problems
from dihera.schema import API_VERSION, KIND, dijob_schema
from dihera.schema_problems import int_formats, schema_problems, unknown_field

__all__ = ["DEFAULT_NAMESPACE", "MAX_HOSTNAME", "apply_defaults", "load_job", "validate"]

DEFAULT_NAMESPACE = "default"
MAX_HOSTNAME = 63
_DNS_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_SINGLETON_TYPES = (TaskType.LEARNER, TaskType.COLLECTOR, TaskType.EVALUATOR)
_ZERO = re.compile(r"^0+(\.0+)?[A-Za-z]*$")  # a quantity of zero (the schema's pattern already holds)


def _strict(schema: dict[str, Any]) -> dict[str, Any]:
    """Objects with declared fields allow no others, except where the CRD keeps unknown fields."""
    if schema.get("type") == "object" and "properties" in schema:
        if not schema.get("x-kubernetes-preserve-unknown-fields"):
            schema.setdefault("additionalProperties", False)
        for key, sub in schema["properties"].items():
            if key != "template":  # checked against core/v1 by check_pod_template
                _strict(sub)
    if isinstance(schema.get("items"), dict):
        _strict(schema["items"])
    return schema


@cache
def _validator() -> Any:
    schema = dijob_schema()
    schema["properties"]["status"] = {}  # status is the controller's, never the user's: not checked
    schema["additionalProperties"] = False  # metadata stays open: it is the API server's ObjectMeta
    schema["title"] = "a DIJob"
    spec = _strict(schema["properties"]["spec"])
    spec["title"] = "the DIJob spec"
    spec["properties"]["tasks"]["items"]["title"] = "a DIJob task"
    spec["properties"]["successPolicy"]["title"] = "the DIJob successPolicy"
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema, format_checker=int_formats())


def _obj(value: Any) -> Mapping[str, Any]:
    """``value`` when it is an object, else an empty one: the rules read a document the schema may have
    refused (a field of the wrong type is the schema's problem to report, never a crash of a rule)."""
    return value if isinstance(value, Mapping) else {}


def _arr(value: Any) -> list[Any]:
    """``value`` when it is a list, else an empty one (see :func:`_obj`)."""
    return value if isinstance(value, list) else []


def _schema_problems(manifest: Mapping[str, Any]) -> list[Problem]:
    return schema_problems(_validator(), manifest, "", "a DIJob")


def _fill(schema: Mapping[str, Any], value: Any) -> Any:
    if schema.get("type") == "integer" and isinstance(value, float) and value.is_integer():
        return int(value)  # 3.0: an integer to JSON schema and the API server, an int to the code
    if isinstance(value, dict) and schema.get("type") == "object":
        for key, sub in schema.get("properties", {}).items():
            if key not in value and "default" in sub:
                value[key] = copy.deepcopy(sub["default"])
            if key in value:
                value[key] = _fill(sub, value[key])
    elif isinstance(value, list) and "items" in schema:
        return [_fill(schema["items"], v) for v in value]
    return value


@cache
def _defaults_schema() -> dict[str, Any]:
    """The schema :func:`_fill` reads (never writes: it copies each default): parsed once, not per document."""
    return dijob_schema()


def apply_defaults(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``manifest`` with the schema's defaults applied, and unnamed tasks named after their type."""
    out: dict[str, Any] = _fill(_defaults_schema(), copy.deepcopy(dict(manifest)))
    for task in _arr(_obj(out.get("spec")).get("tasks")):
        kind = task.get("type") if isinstance(task, dict) else None
        if isinstance(kind, str) and "name" not in task and kind in {t.value for t in _SINGLETON_TYPES}:
            task["name"] = task["type"]
    return out


#: The fields of the API server's ObjectMeta (metadata is not in the CRD's schema; the API server decodes it).
_OBJECT_META = (
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation", "creationTimestamp",
    "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations", "ownerReferences", "finalizers",
    "managedFields",
)  # fmt: skip


def _metadata_problems(meta: Any) -> list[Problem]:
    """``metadata`` as the API server decodes it (strictly, as kubectl sends it): an object of ObjectMeta's
    fields, its labels and annotations maps of strings."""
    if meta is None:
        return []
    if not isinstance(meta, Mapping):
        return [Problem("metadata", f"must be of type object, got {format_value(meta)}")]
    unknown = [k for k in meta if k not in _OBJECT_META]
    problems = [unknown_field(f"metadata.{k}", str(k), _OBJECT_META, "ObjectMeta") for k in unknown]
    for field in ("labels", "annotations"):
        value = meta.get(field)
        if value is not None and not isinstance(value, Mapping):
            problems.append(Problem(f"metadata.{field}", f"must be a map of strings, got {format_value(value)}"))
        for key, v in _obj(value).items():
            if not isinstance(v, str):
                problems.append(Problem(f"metadata.{field}.{key}", f"must be a string, got {format_value(v)}"))
    return problems


def _identity_problems(manifest: Mapping[str, Any]) -> list[Problem]:
    problems = _metadata_problems(manifest.get("metadata"))
    for field, expected in (("apiVersion", API_VERSION), ("kind", KIND)):
        if field not in manifest:
            problems.append(Problem(field, f"is required: {expected}"))
        elif manifest[field] != expected:
            problems.append(Problem(field, f"{format_value(manifest[field])} is not valid; expected {expected}"))
    name = _obj(manifest.get("metadata")).get("name")
    if not isinstance(name, str) or not name:
        problems.append(Problem("metadata.name", "is required"))
    elif not _DNS_LABEL.match(name):
        problems.append(
            Problem(
                "metadata.name",
                f"{name!r} is not a DNS label starting with a letter (it names pods, a Service and a Workflow)",
            )
        )
    return problems


#: Annotations that hold whole seconds >= 0, and what 0 means: the peer wait's bound (docs/rendering.md) and
#: the grace of the other replicas after DI-engine's end (docs/controller.md, "When a job succeeds").
_SECONDS_ANNOTATIONS = {
    ANNOTATION_PEER_WAIT_TIMEOUT: "0 turns the wait off",
    ANNOTATION_FINISH_GRACE: "0 stops the others as soon as the learners and evaluators have ended",
}


def _seconds_annotation_problems(manifest: Mapping[str, Any]) -> list[Problem]:
    """The job's annotations that hold seconds must hold whole seconds."""
    annotations = _obj(_obj(manifest.get("metadata")).get("annotations"))
    problems = []
    for name, zero in _SECONDS_ANNOTATIONS.items():
        if name in annotations and not str(annotations[name]).strip().isdigit():
            problems.append(
                Problem(
                    f"metadata.annotations.{name}",
                    f"{annotations[name]!r} is not a whole number of seconds >= 0 ({zero})",
                )
            )
    return problems


def _reserved_name_problems(tasks: Any) -> list[Problem]:
    """No user container or init container may take the name of dihera's own init container."""
    problems = []
    for i, task in enumerate(tasks if isinstance(tasks, list) else []):
        spec = _obj(_obj(_obj(task).get("template")).get("spec"))
        for field in ("initContainers", "containers"):
            items = spec.get(field) if isinstance(spec, Mapping) else None
            problems += [
                Problem(
                    f"spec.tasks[{i}].template.spec.{field}[{j}].name",
                    f"{PEER_WAIT_CONTAINER!r} is the name of the init container dihera adds to every replica "
                    "(docs/rendering.md); choose another name",
                )
                for j, c in enumerate(items if isinstance(items, list) else [])
                if isinstance(c, Mapping) and c.get("name") == PEER_WAIT_CONTAINER
            ]
    return problems


def _rule_problems(name: str, spec: Mapping[str, Any]) -> list[Problem]:
    """The cross-field rules (also CEL rules of the CRD), on a spec with defaults applied."""
    tasks = [t for t in _arr(spec.get("tasks")) if isinstance(t, Mapping)]
    lo, hi = spec.get("minReplicas"), spec.get("maxReplicas")
    return (
        _unnamed_problems(tasks)
        + _duplicate_name_problems(tasks)
        + _singleton_problems(tasks)
        + _bounds_problems(tasks, lo, hi)
        + _hostname_length_problems(name, tasks, hi)
    )


def _unnamed_problems(tasks: list[Mapping[str, Any]]) -> list[Problem]:
    """A task of type none needs a name (the others are named after their type)."""
    return [
        Problem(f"spec.tasks[{i}].name", "is required for a task of type none")
        for i, t in enumerate(tasks)
        if t.get("type") == TaskType.NONE and "name" not in t
    ]


def _duplicate_name_problems(tasks: list[Mapping[str, Any]]) -> list[Problem]:
    names = Counter(t["name"] for t in tasks if isinstance(t.get("name"), str))
    return [
        Problem(
            f"spec.tasks[{i}].name",
            f"{t['name']!r} is used by {names[t['name']]} tasks; task names must be unique "
            "(a task without a name is named after its type)",
        )
        for i, t in enumerate(tasks)
        if isinstance(t.get("name"), str) and names[t["name"]] > 1
    ]


def _singleton_problems(tasks: list[Mapping[str, Any]]) -> list[Problem]:
    """At most one task of each type learner, collector and evaluator."""
    types = Counter(t["type"] for t in tasks if isinstance(t.get("type"), str))
    return [
        Problem(
            f"spec.tasks[{i}].type",
            f"{t['type']!r} is the type of {types[t['type']]} tasks; "
            "at most one task of each type learner, collector and evaluator",
        )
        for i, t in enumerate(tasks)
        if t.get("type") in _SINGLETON_TYPES and types[t["type"]] > 1
    ]


def _bounds_problems(tasks: list[Mapping[str, Any]], lo: Any, hi: Any) -> list[Problem]:
    """minReplicas <= the total replicas of all tasks <= maxReplicas."""
    problems = []
    total = sum(t.get("replicas", 1) for t in tasks if isinstance(t.get("replicas", 1), int))
    if isinstance(lo, int) and isinstance(hi, int) and lo > hi:
        problems.append(Problem("spec.minReplicas", f"{lo} must not exceed maxReplicas ({hi})"))
    if isinstance(lo, int) and total < lo:
        problems.append(
            Problem("spec.tasks", f"the total replicas of all tasks ({total}) must be at least minReplicas ({lo})")
        )
    if isinstance(hi, int) and total > hi:
        problems.append(
            Problem("spec.tasks", f"the total replicas of all tasks ({total}) must be at most maxReplicas ({hi})")
        )
    return problems


def _hostname_length_problems(name: str, tasks: list[Mapping[str, Any]], hi: Any) -> list[Problem]:
    """A replica's hostname ``<job>-<task>-<index>``, up to the highest index the task may reach
    (maxReplicas), must be a DNS label."""
    if not isinstance(name, str) or not name:
        return []
    problems = []
    for i, t in enumerate(tasks):
        replicas = t.get("replicas", 1)
        if not isinstance(replicas, int) or not isinstance(t.get("name"), str):
            continue
        top = max(replicas, hi if isinstance(hi, int) else 0) - 1
        host = f"{name}-{t['name']}-{top}"
        if len(host) > MAX_HOSTNAME:
            problems.append(
                Problem(
                    f"spec.tasks[{i}].name",
                    f"pod hostname {host!r} would be {len(host)} characters long; "
                    f"at most {MAX_HOSTNAME} are allowed (shorten the job or task name)",
                )
            )
    return problems


def _short_hostname_problems(name: str, spec: Mapping[str, Any]) -> list[Problem]:
    """No task may be named ``<job>-<another task>``: its replicas' short hostnames ``<task>-<index>``
    would be the other task's long hostnames ``<job>-<task>-<index>``; nor ``<another task>-short``,
    the name of that task's short-hostname template (docs/rendering.md)."""
    tasks = [t for t in _arr(spec.get("tasks")) if isinstance(t, Mapping)]
    problems: list[Problem] = []
    if not name:
        return problems
    task_names = {t["name"] for t in tasks if isinstance(t.get("name"), str)}
    for i, t in enumerate(tasks):
        other = t["name"].removeprefix(f"{name}-") if isinstance(t.get("name"), str) else None
        if other is not None and other != t["name"] and other in task_names:
            problems.append(
                Problem(
                    f"spec.tasks[{i}].name",
                    f"{t['name']!r} is the job's name {name!r}, a dash and the name of task {other!r}: its "
                    f"replicas' short hostnames <task>-<index> would be the long hostnames of {other!r}'s replicas "
                    '(docs/rendering.md, "Names in the node lists"); choose another name',
                )
            )
        base = t["name"].removesuffix(SHORT_TEMPLATE_SUFFIX) if isinstance(t.get("name"), str) else None
        if base is not None and base != t["name"] and base in task_names:
            problems.append(
                Problem(
                    f"spec.tasks[{i}].name",
                    f"{t['name']!r} is the name of the Workflow template of task {base!r}'s replicas with short "
                    'hostnames (docs/rendering.md, "Names in the node lists"); choose another name',
                )
            )
    return problems


def _success_policy_problems(spec: Mapping[str, Any]) -> list[Problem]:
    """``successPolicy.targetTasks`` must name tasks of the job (also a CEL rule of the CRD)."""
    policy = spec.get("successPolicy")
    targets = policy.get("targetTasks") if isinstance(policy, Mapping) else None
    if not isinstance(targets, list):
        return []
    names = [t["name"] for t in _arr(spec.get("tasks")) if isinstance(t, Mapping) and isinstance(t.get("name"), str)]
    return [
        Problem(
            f"spec.successPolicy.targetTasks[{i}]",
            f"{format_value(n)} is not a task of the job; valid: {', '.join(names) or 'no task has a name'}",
        )
        for i, n in enumerate(targets)
        if isinstance(n, str) and n not in names
    ]


def _checkpoint_problems(spec: Mapping[str, Any]) -> list[Problem]:
    """``checkpoint``: its tasks name tasks of the job, its size is above zero (both CEL rules of the CRD
    too), and its volume name and mountPath are free in the pods that mount it."""
    ckpt = spec.get("checkpoint")
    if not isinstance(ckpt, Mapping):
        return []
    tasks = [t for t in _arr(spec.get("tasks")) if isinstance(t, Mapping) and isinstance(t.get("name"), str)]
    problems = _checkpoint_field_problems(ckpt, [t["name"] for t in tasks])
    problems += _checkpoint_name_problems(_arr(spec.get("volumes")), "spec.volumes")
    mounted = set(checkpoint_tasks(spec))
    for i, t in enumerate(tasks):
        if t["name"] in mounted:
            pod = _obj(_obj(t.get("template")).get("spec"))
            where = f"spec.tasks[{i}].template.spec"
            problems += _checkpoint_name_problems(_arr(pod.get("volumes")), f"{where}.volumes")
            problems += _mount_path_problems(pod, where, ckpt.get("mountPath"))
    return problems


def _checkpoint_field_problems(ckpt: Mapping[str, Any], names: list[str]) -> list[Problem]:
    valid = ", ".join(names) or "no task has a name"
    problems = [
        Problem(f"spec.checkpoint.tasks[{i}]", f"{format_value(n)} is not a task of the job; valid: {valid}")
        for i, n in enumerate(_arr(ckpt.get("tasks")))
        if isinstance(n, str) and n not in names
    ]
    size = ckpt.get("size")
    if isinstance(size, str) and _ZERO.match(size):
        why = f"{format_value(size)} is not above zero; valid: a quantity like 512Mi or 10Gi"
        problems.append(Problem("spec.checkpoint.size", why))
    return problems


def _checkpoint_name_problems(volumes: Any, where: str) -> list[Problem]:
    why = f"{CHECKPOINT_VOLUME!r} is the checkpoint volume's name (spec.checkpoint); choose another name"
    return [
        Problem(f"{where}[{j}].name", why)
        for j, v in enumerate(volumes)
        if isinstance(v, Mapping) and v.get("name") == CHECKPOINT_VOLUME
    ]


def _mount_path_problems(pod: Mapping[str, Any], where: str, path: Any) -> list[Problem]:
    why = (
        f"{format_value(path)} is spec.checkpoint.mountPath, where the checkpoint volume is mounted; "
        "choose another path (or another spec.checkpoint.mountPath)"
    )
    return [
        Problem(f"{where}.{kind}[{j}].volumeMounts[{k}].mountPath", why)
        for kind in ("containers", "initContainers")
        for j, c in enumerate(_arr(pod.get(kind)))
        if isinstance(c, Mapping)
        for k, mount in enumerate(_arr(c.get("volumeMounts")))
        if isinstance(mount, Mapping) and mount.get("mountPath") == path
    ]


def checkpoint_tasks(spec: Mapping[str, Any]) -> list[str]:
    """The tasks mounting the checkpoint volume of a defaulted spec: ``checkpoint.tasks``, else the learner
    task, else every task."""
    ckpt = spec.get("checkpoint")
    if not isinstance(ckpt, Mapping):
        return []
    if isinstance(ckpt.get("tasks"), list):
        return [n for n in ckpt["tasks"] if isinstance(n, str)]
    tasks = [t for t in _arr(spec.get("tasks")) if isinstance(t, Mapping) and isinstance(t.get("name"), str)]
    learners = [t["name"] for t in tasks if t.get("type") == TaskType.LEARNER]
    return learners or [t["name"] for t in tasks]


def _checkpoint(spec: Mapping[str, Any]) -> Checkpoint | None:
    ckpt = spec.get("checkpoint")
    if ckpt is None:
        return None
    return Checkpoint(
        tasks=tuple(checkpoint_tasks(spec)),
        size=ckpt["size"],
        storage_class_name=ckpt.get("storageClassName"),
        access_mode=ckpt["accessMode"],
        mount_path=ckpt["mountPath"],
        reclaim_policy=ReclaimPolicy(ckpt["reclaimPolicy"]),
    )


def _failure_policy_problems(spec: Mapping[str, Any]) -> list[Problem]:
    """DropReplica scales the task down: a task with an envProvider must allow scaling (also a CEL rule)."""
    problems = []
    for i, t in enumerate(_arr(spec.get("tasks"))):
        if not isinstance(t, Mapping) or t.get("failurePolicy") != FailurePolicy.DROP_REPLICA:
            continue
        provider = t.get("envProvider")
        if isinstance(provider, Mapping) and provider.get("allowScaling") is not True:
            problems.append(
                Problem(
                    f"spec.tasks[{i}].failurePolicy",
                    f"'DropReplica' removes replicas from the running job, but the task's {provider.get('name')} "
                    "envProvider does not allow scaling; valid: 'FailJob', or set "
                    f"spec.tasks[{i}].envProvider.allowScaling: true",
                )
            )
    return problems


def _success_policy(spec: Mapping[str, Any]) -> SuccessPolicy | None:
    policy = spec.get("successPolicy")
    if policy is None:
        return None
    return SuccessPolicy(SuccessOperator(policy["operator"]), tuple(policy.get("targetTasks") or ()))


def _started(manifest: Mapping[str, Any]) -> bool:
    """Whether the controller has taken the job up (``status.phase`` set)."""
    status = manifest.get("status")
    return isinstance(status, Mapping) and bool(status.get("phase"))


def validate(manifest: Any) -> list[Problem]:
    """Every problem of a DIJob manifest (a dict as read from YAML); empty when it is valid.

    The environment-size rule (:func:`~dihera.env_limits.env_size_problems`), the short-hostname
    rule (no task named ``<job>-<another task>``) and the task-order rule (no ``none`` task before
    DI-engine tasks that take roles from node ids, :mod:`dihera.node_ids`) apply to a job not yet
    taken up (no ``status.phase``); a running job's growth past it is refused by its scaling plan. So does
    the rule on the names dihera adds to every pod (:mod:`dihera.reserved`: env, volumes, mount path),
    newer than some running jobs, whose templates the renderer keeps rendering as before (a variable of
    dihera's name dropped).
    """
    if not isinstance(manifest, Mapping):
        return [Problem("(root)", f"a DIJob must be an object, got {format_value(manifest)}")]
    problems = _identity_problems(manifest) + _schema_problems(manifest)
    defaulted = apply_defaults(manifest)
    spec = defaulted.get("spec")
    if not isinstance(spec, Mapping):
        return problems
    name = _obj(defaulted.get("metadata")).get("name")
    name = name if isinstance(name, str) else ""
    problems += _rule_problems(name, spec)
    if not _started(manifest):  # a running job's growth is checked by its scaling plan, on the exact membership
        problems += env_size_problems(name, spec) + _short_hostname_problems(name, spec)
        problems += none_before_ditask_problems(_arr(spec.get("tasks")))
        problems += reserved_problems(spec, checkpoint_tasks(spec))
    problems += _success_policy_problems(spec) + _failure_policy_problems(spec) + _checkpoint_problems(spec)
    problems += provider_problems(_arr(spec.get("tasks")))
    problems += _seconds_annotation_problems(manifest) + _reserved_name_problems(spec.get("tasks"))
    problems += _template_problems(_arr(spec.get("tasks")))
    problems += _volume_problems(_arr(spec.get("volumes"))) + artifact_problems(spec, checkpoint_tasks(spec))
    return sorted(set(problems))


def _template_problems(tasks: Any) -> list[Problem]:
    """Each task's pod template against core/v1 (:func:`~dihera.podtemplate.check_pod_template`)."""
    problems: list[Problem] = []
    for i, task in enumerate(tasks):
        if isinstance(task, Mapping) and "template" in task:
            problems += check_pod_template(task["template"], f"spec.tasks[{i}].template")
    return problems


def _volume_problems(volumes: Any) -> list[Problem]:
    """Each volume against core/v1, and volume names unique."""
    problems: list[Problem] = []
    named = [v for v in volumes if isinstance(v, Mapping) and isinstance(v.get("name"), str)]
    volume_names = Counter(v["name"] for v in named)
    for i, v in enumerate(volumes):
        problems += check_volume(v, f"spec.volumes[{i}]")
        if any(v is n for n in named) and volume_names[v["name"]] > 1:
            problems.append(
                Problem(
                    f"spec.volumes[{i}].name",
                    f"{v.get('name')!r} is used by {volume_names[v.get('name')]} volumes; volume names must be unique",
                )
            )
    return problems


def load_job(manifest: Any, namespace: str | None = None, source: str = "DIJob") -> DIJob:
    """Validate ``manifest`` and return the typed job; raise :class:`InvalidJobError` listing every problem.

    ``namespace`` fills in ``metadata.namespace`` when the manifest has none (``default`` otherwise).
    """
    problems = validate(manifest)
    if problems:
        raise InvalidJobError(problems, source)
    m = apply_defaults(manifest)
    meta, spec = m.get("metadata") or {}, m["spec"]
    return DIJob(
        name=meta["name"],
        namespace=meta.get("namespace") or namespace or DEFAULT_NAMESPACE,
        tasks=tuple(
            Task(
                name=t["name"],
                type=TaskType(t["type"]),
                replicas=t["replicas"],
                template=without_nulls(t["template"]),  # as validated: null is not set
                env_provider=parse_env_provider(t.get("envProvider")),
                failure_policy=FailurePolicy(t.get("failurePolicy") or FailurePolicy.FAIL_JOB),
            )
            for t in spec["tasks"]
        ),
        priority=Priority(spec["priority"]),
        clean_pod_policy=CleanPodPolicy(spec["cleanPodPolicy"]),
        preemptible=spec["preemptible"],
        backoff_limit=spec["backoffLimit"],
        group=spec.get("group"),
        min_replicas=spec.get("minReplicas"),
        max_replicas=spec.get("maxReplicas"),
        volumes=tuple(without_nulls(spec.get("volumes") or [])),
        labels=dict(meta.get("labels") or {}),
        annotations=dict(meta.get("annotations") or {}),
        uid=meta.get("uid"),
        success_policy=_success_policy(spec),
        active_deadline_seconds=spec.get("activeDeadlineSeconds"),
        ttl_seconds_after_finished=spec.get("ttlSecondsAfterFinished"),
        suspend=bool(spec.get("suspend", False)),
        checkpoint=_checkpoint(spec),
        artifacts=parse_artifacts(spec),
    )
