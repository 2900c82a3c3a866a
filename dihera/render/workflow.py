"""Render a DIJob into an Argo Workflow with Hera (pure, deterministic).

Shape: one DAG node per replica (``<task>-<index>``), all running in parallel, over one template
per task. The template is parameterised by ``index`` and ``rank``, which Argo substitutes into the
pod's hostname (via ``podSpecPatch``), labels, annotations and env, so the Workflow's size grows by
one small DAG entry per replica. A task with replicas whose pods have short hostnames
(``<task>-<index>``, docs/rendering.md) gets a second template, ``<task>-short``, that differs only in
the pod's hostname and ``DI_FQDN``; their DAG entries name it. The user's pod spec is kept whole: containers become a
``containerSet`` (names kept, the pod succeeds when all succeed); fields an Argo template carries go
on the template, every other pod spec field goes into ``podSpecPatch``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pydantic
from hera.workflows import Workflow
from hera.workflows import models as m
from hera.workflows.protocol import Templatable

from dihera.argo_ui import describe, ui_annotations
from dihera.constants import (
    ANNOTATION_ARTIFACT_COLLECTOR,
    ANNOTATION_RANK,
    ANNOTATION_REPLICAS,
    ANNOTATION_TASK_RANK,
    ANNOTATION_WORKFLOW_DESCRIPTION,
    ANNOTATION_WORKFLOW_TITLE,
    ARGO_MAIN_CONTAINER,
    LABEL_JOB,
    LABEL_POD,
    LABEL_TASK_NAME,
    LABEL_TASK_TYPE,
    MANAGED_BY,
    MEMBERSHIP_VOLUME,
    WORKFLOW_ENTRYPOINT,
)
from dihera.membership import Membership
from dihera.model import CleanPodPolicy, DIJob, Task
from dihera.naming import (
    dag_task_name,
    hostname,
    membership_configmap_name,
    replica_hostname,
    search_domain,
    service_name,
    short_template_name,
    workflow_name,
)
from dihera.podtemplate import normalize_pod_spec
from dihera.render.checkpoint import checkpoint_mounts, checkpoint_volumes
from dihera.render.env import INDEX, RANK, di_env, shorten_fqdn
from dihera.render.objects import owner_references
from dihera.render.outputs import artifact_collector, outputs
from dihera.render.peer_wait import peer_wait_container
from dihera.render.providers import provider_ports
from dihera.render.settings import RenderSettings
from dihera.render.strict import strict, strict_list

__all__ = [
    "DESCRIPTION_ANNOTATION",
    "ENTRYPOINT",
    "MEMBERSHIP_VOLUME",
    "build_workflow",
    "dag_task",
    "describe",
    "short_variant",
]

ENTRYPOINT = WORKFLOW_ENTRYPOINT
DESCRIPTION_ANNOTATION = ANNOTATION_WORKFLOW_DESCRIPTION

#: Pod spec fields an Argo template carries itself: camelCase pod spec name -> (Template field, its model).
_TEMPLATE_FIELDS: Mapping[str, tuple[str, type[pydantic.BaseModel] | None]] = {
    "nodeSelector": ("node_selector", None),
    "affinity": ("affinity", m.Affinity),
    "tolerations": ("tolerations", m.Toleration),
    "serviceAccountName": ("service_account_name", None),
    "securityContext": ("security_context", m.PodSecurityContext),
    "automountServiceAccountToken": ("automount_service_account_token", None),
    "hostAliases": ("host_aliases", m.HostAlias),
    "priorityClassName": ("priority_class_name", None),
    "schedulerName": ("scheduler_name", None),
}
#: Handled on their own: containers (containerSet) and init containers (both get the DI_* env; dihera's
#: peer wait goes first), volumes (merged), restartPolicy (Argo's: Never).
_OWN_FIELDS = frozenset({"containers", "initContainers", "volumes", "restartPolicy"})

_POD_GC: Mapping[CleanPodPolicy, str | None] = {
    CleanPodPolicy.ALL: "OnWorkflowCompletion",
    CleanPodPolicy.RUNNING: None,  # the controller deletes pods still running when the job ends
    CleanPodPolicy.NONE: None,
}


def _container(
    container: Mapping[str, Any], env: list[dict[str, Any]], mount_dir: str, extra: list[dict[str, Any]]
) -> dict[str, Any]:
    """The user's container with the DI_* env first (so user values may refer to them), the membership mounted
    and the ``extra`` mounts (the checkpoint volume's)."""
    ours = {e["name"] for e in env}
    user_env = [e for e in container.get("env", []) if e.get("name") not in ours]
    membership = {"name": MEMBERSHIP_VOLUME, "mountPath": mount_dir, "readOnly": True}
    return {
        **container,
        "env": env + user_env,
        "volumeMounts": [*container.get("volumeMounts", []), membership, *extra],
    }


def _with_ports(containers: list[dict[str, Any]], ports: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The env provider's ports declared on the first container (unless it declares that port or name)."""
    if not ports:
        return containers
    first = containers[0]
    have = first.get("ports", [])
    taken = {p.get("containerPort") for p in have} | {p.get("name") for p in have}
    extra = [p for p in ports if p["containerPort"] not in taken and p["name"] not in taken]
    return [{**first, "ports": [*have, *extra]}, *containers[1:]] if extra else containers


def _dns_config(user: Mapping[str, Any] | None, domain: str) -> dict[str, Any]:
    """The template's ``dnsConfig`` with the job's search domain appended, so a replica's bare hostname
    resolves (the membership lists of a large job use bare hostnames: docs/rendering.md)."""
    config = dict(user or {})
    searches = [s for s in config.get("searches") or [] if s != domain]
    return {**config, "searches": [*searches, domain]}


def _pod_metadata(job: DIJob, task: Task, replicas: int, collector: bool = False) -> m.Metadata:
    """The replica pod's labels and annotations; ``collector``: it has the ``main`` container that collects its
    artifacts (dihera/render/outputs.py), which the controller does not count as the user's."""
    meta = task.template.get("metadata") or {}
    labels = {
        **dict(meta.get("labels") or {}),
        **_job_pod_labels(job, task),
        LABEL_POD: hostname(job.name, task.name, INDEX),
    }
    annotations = {
        **dict(meta.get("annotations") or {}),
        ANNOTATION_RANK: RANK,
        ANNOTATION_TASK_RANK: INDEX,
        ANNOTATION_REPLICAS: str(replicas),
        **({ANNOTATION_ARTIFACT_COLLECTOR: ARGO_MAIN_CONTAINER} if collector else {}),
    }
    return m.Metadata(labels=labels, annotations=annotations)


def _job_pod_labels(job: DIJob, task: Task) -> dict[str, str]:
    return {**MANAGED_BY, LABEL_JOB: job.name, LABEL_TASK_NAME: task.name, LABEL_TASK_TYPE: task.type.value}


def _task_template(job: DIJob, task: Task, replicas: int, settings: RenderSettings, short: bool = False) -> m.Template:
    """The template of ``task``'s replicas; ``short``: of those with a short hostname (``<task>-short``)."""
    spec = normalize_pod_spec(task.template.get("spec") or {})
    env = di_env(job, task, settings, short)
    patch = {k: v for k, v in spec.items() if k not in _TEMPLATE_FIELDS and k not in _OWN_FIELDS}
    patch["hostname"] = replica_hostname(job.name, task.name, INDEX, short)
    patch["subdomain"] = service_name(job.name)
    patch["dnsConfig"] = _dns_config(
        spec.get("dnsConfig"), search_domain(job.name, job.namespace, settings.cluster_domain)
    )
    volumes = [
        *spec.get("volumes", []),
        *(dict(v) for v in job.volumes),
        {"name": MEMBERSHIP_VOLUME, "configMap": {"name": membership_configmap_name(job.name)}},
        *checkpoint_volumes(job, task),
    ]
    mounts = checkpoint_mounts(job, task)
    containers = _with_ports(
        [_container(c, env, settings.membership_dir, mounts) for c in spec["containers"]], provider_ports(task)
    )
    collector = artifact_collector(job, task, containers, settings)
    return m.Template(
        name=short_template_name(task.name) if short else task.name,
        inputs=m.Inputs(parameters=[m.Parameter(name="index"), m.Parameter(name="rank")]),
        metadata=_pod_metadata(job, task, replicas, collector is not None),
        container_set=m.ContainerSetTemplate(
            containers=strict_list(
                m.ContainerNode, [*containers, *([collector] if collector else [])], "spec.containers"
            )
        ),
        init_containers=_init_containers(job, spec, env, settings, mounts),
        volumes=strict_list(m.Volume, volumes, "spec.volumes"),
        outputs=outputs(job, task),
        pod_spec_patch=json.dumps(patch, sort_keys=True, separators=(",", ":")),
        retry_strategy=(
            m.RetryStrategy(limit=m.IntOrString(job.backoff_limit), retry_policy="Always")
            if job.backoff_limit > 0
            else None
        ),
        **_template_fields(spec),
    )


def _init_containers(
    job: DIJob,
    spec: Mapping[str, Any],
    env: list[dict[str, Any]],
    settings: RenderSettings,
    mounts: list[dict[str, Any]],
) -> list[m.UserContainer] | None:
    """dihera's peer wait first (docs/rendering.md), then the user's, which get the same DI_* env and mounts as
    containers."""
    user = strict_list(
        m.UserContainer,
        [_container(c, env, settings.membership_dir, mounts) for c in spec.get("initContainers", [])],
        "spec.initContainers",
    )
    wait = peer_wait_container(job, settings)
    return [*([wait] if wait else []), *user] or None


def _template_fields(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The pod spec fields an Argo template carries itself, as Hera models (unknown keys fail)."""
    out: dict[str, Any] = {}
    for source, (field, model) in _TEMPLATE_FIELDS.items():
        if source not in spec:
            continue
        value = spec[source]
        if model is None:
            out[field] = value
        elif isinstance(value, list):
            out[field] = strict_list(model, value, f"spec.{source}")
        else:
            out[field] = strict(model, value, f"spec.{source}")
    return out


def dag_task(task_name: str, index: int, rank: int, drop: bool = False, short: bool = False) -> m.DAGTask:
    """The DAG node of one replica. ``drop``: its task's failurePolicy is DropReplica, so a replica that
    exhausted its retries must not fail the Workflow (``continueOn: {failed: true}``; Argo's
    experiments c and c0); the controller removes it from the job instead. ``short``: the replica has
    a short hostname, its template is ``<task>-short``."""
    return m.DAGTask(
        name=dag_task_name(task_name, index),
        template=short_template_name(task_name) if short else task_name,
        continue_on=m.ContinueOn(failed=True) if drop else None,
        arguments=m.Arguments(
            parameters=[
                m.Parameter(name="index", value=str(index)),
                m.Parameter(name="rank", value=str(rank)),
            ]
        ),
    )


def build_workflow(job: DIJob, membership: Membership, settings: RenderSettings) -> Workflow:
    """The Hera ``Workflow`` running ``job`` with ``membership``'s replicas."""
    dag = m.Template(
        name=ENTRYPOINT,
        dag=m.DAGTemplate(
            tasks=[dag_task(r.task, r.index, r.rank, r.task in job.drop_tasks, r.short) for r in membership.replicas]
        ),
    )
    short_tasks = {r.task for r in membership.replicas if r.short}
    templates: list[m.Template | Templatable] = [
        dag,
        *(_task_template(job, t, len(membership.replicas), settings) for t in job.tasks),
        *(_task_template(job, t, len(membership.replicas), settings, True) for t in job.tasks if t.name in short_tasks),
    ]
    labels = {**dict(job.labels), **MANAGED_BY, LABEL_JOB: job.name}
    annotations = {
        ANNOTATION_WORKFLOW_TITLE: f"DIJob {job.name}",
        **ui_annotations(
            job.id, [(t.name, t.type.value, len(membership.of_task(t.name))) for t in job.tasks], membership.generation
        ),
    }
    pod_gc = _POD_GC[job.clean_pod_policy]
    wf = Workflow(
        api_version="argoproj.io/v1alpha1",
        kind="Workflow",
        name=workflow_name(job.name),
        namespace=job.namespace,
        labels=labels,
        annotations=annotations,
        entrypoint=ENTRYPOINT,
        templates=templates,
        pod_gc=m.PodGC(strategy=pod_gc) if pod_gc else None,
    )
    if owners := owner_references(job):
        wf.owner_references = [
            m.OwnerReference(
                api_version=o["apiVersion"],
                kind=o["kind"],
                name=o["name"],
                uid=o["uid"],
                controller=o["controller"],
                block_owner_deletion=o["blockOwnerDeletion"],
            )
            for o in owners
        ]
    return wf


def short_variant(template: Mapping[str, Any]) -> dict[str, Any]:
    """The ``<task>-short`` template derived from a rendered ``<task>`` template (a Workflow's JSON):
    the same template but for the pod's hostname (``podSpecPatch``) and ``DI_FQDN`` of every container
    and init container. What :func:`build_workflow` renders with ``short``; scaling adds it to a running
    Workflow when its first short-hostname replica joins (:mod:`dihera.scaling.workflow_patch`)."""
    out = json.loads(json.dumps(template))
    task = str(out["name"])
    patch = json.loads(out["podSpecPatch"])
    long_host = str(patch["hostname"])
    short_host = replica_hostname("", task, INDEX, True)
    patch["hostname"] = short_host
    out["name"] = short_template_name(task)
    out["podSpecPatch"] = json.dumps(patch, sort_keys=True, separators=(",", ":"))
    containers = [*((out.get("containerSet") or {}).get("containers") or []), *(out.get("initContainers") or [])]
    shorten_fqdn(containers, long_host, short_host)
    return dict(out)
