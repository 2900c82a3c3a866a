"""Render a :class:`~dihera.pipelines.pipeline.Pipeline` into an Argo Workflow with Hera (pure, deterministic).

Shape: the DAG ``pipeline`` runs ``train`` (a resource template that creates the DIJob, owned by the Workflow,
and ends with it: Succeeded when its ``status.phase`` is, Failed when it is ``Failed`` or ``Suspended``), then
``locate`` (``dihera experiment artifact-key`` in dihera's image: the key of the job's stored ``policy``, from
its ``status.artifacts``), then ``evaluate`` and, if given, ``export``, each the user's container with that
artifact as its input ``policy`` (by key, from Argo's artifact repository) at
:data:`~dihera.pipelines.pipeline.POLICY_PATH`. ``export`` runs after ``evaluate``: a policy that did not
evaluate is not exported. What the steps store goes to ``dihera/<namespace>/<pipeline>/<Workflow uid>/<pod>/
<artifact>/<file>`` (:func:`dihera.artifacts.file_key`), whatever the repository's key format.
"""

from __future__ import annotations

import json

from hera.workflows import Workflow
from hera.workflows import models as m

from dihera.artifacts import file_key, key_prefix
from dihera.constants import ANNOTATION_WORKFLOW_DESCRIPTION, ANNOTATION_WORKFLOW_TITLE, LABEL_EXPERIMENT, MANAGED_BY
from dihera.pipelines.pipeline import POLICY_PATH, Pipeline, Step
from dihera.workflow_parts import CHECK_EVERY_SECOND, RESTRICTED, tolerations

__all__ = ["EVALUATE", "EXPORT", "KEY_FILE", "LOCATE", "TRAIN", "build_pipeline_workflow"]

ENTRYPOINT = "pipeline"
TRAIN = "train"
LOCATE = "locate"
EVALUATE = "evaluate"
EXPORT = "export"
#: Where ``locate`` writes the key (an emptyDir: the container's root filesystem is read-only).
KEY_FILE = "/tmp/out/key"


def _train(pipeline: Pipeline) -> m.Template:
    return m.Template(
        name=TRAIN,
        pod_spec_patch=CHECK_EVERY_SECOND,
        resource=m.ResourceTemplate(
            action="create",
            set_owner_reference=True,
            success_condition="status.phase == Succeeded",
            failure_condition="status.phase in (Failed,Suspended)",
            manifest=json.dumps(pipeline.job_manifest(), indent=2, sort_keys=True),
        ),
        outputs=m.Outputs(
            parameters=[
                m.Parameter(name="phase", value_from=m.ValueFrom(json_path="{.status.phase}")),
                m.Parameter(name="job", value_from=m.ValueFrom(json_path="{.metadata.name}")),
            ]
        ),
    )


def _locate(pipeline: Pipeline) -> m.Template:
    command = [
        "dihera", "experiment", "artifact-key", "--namespace", pipeline.namespace, "--job", pipeline.job_name,
        "--artifact", pipeline.policy, "--timeout", str(pipeline.locate_timeout), "--out", KEY_FILE,
    ]  # fmt: skip
    return m.Template(
        name=LOCATE,
        container=m.Container(
            image=pipeline.image,
            command=command,
            security_context=RESTRICTED,
            volume_mounts=[m.VolumeMount(name="out", mount_path=KEY_FILE.rsplit("/", 1)[0])],
        ),
        volumes=[m.Volume(name="out", empty_dir=m.EmptyDirVolumeSource())],
        outputs=m.Outputs(parameters=[m.Parameter(name="key", value_from=m.ValueFrom(path=KEY_FILE))]),
    )


_AS_IS = m.ArchiveStrategy(none=m.NoneStrategy())


def _step(name: str, step: Step, prefix: str) -> m.Template:
    policy = m.Artifact(name="policy", path=POLICY_PATH, s3=m.S3Artifact(key="{{inputs.parameters.key}}"))
    resources = m.ResourceRequirements(**dict(step.resources)) if step.resources else None
    outputs = m.Outputs(
        parameters=[m.Parameter(name=k, value_from=m.ValueFrom(path=v)) for k, v in step.outputs.items()] or None,
        # stored as they are (not tar-gzipped): the Argo UI and argo server serve each file for download
        artifacts=[
            m.Artifact(name=k, path=v, archive=_AS_IS, s3=m.S3Artifact(key=file_key(prefix, k, v)))
            for k, v in step.artifacts.items()
        ]
        or None,
    )
    return m.Template(
        name=name,
        inputs=m.Inputs(parameters=[m.Parameter(name="key")], artifacts=[policy]),
        container=m.Container(
            image=step.image,
            command=list(step.command),
            working_dir=step.working_dir,
            env=[m.EnvVar(name=k, value=v) for k, v in step.env.items()] or None,
            resources=resources,
        ),
        outputs=outputs if (step.outputs or step.artifacts) else None,
    )


def _dag(pipeline: Pipeline) -> m.Template:
    key = m.Arguments(parameters=[m.Parameter(name="key", value=f"{{{{tasks.{LOCATE}.outputs.parameters.key}}}}")])
    tasks = [
        m.DAGTask(name=TRAIN, template=TRAIN),
        m.DAGTask(name=LOCATE, template=LOCATE, dependencies=[TRAIN]),
        m.DAGTask(name=EVALUATE, template=EVALUATE, dependencies=[LOCATE], arguments=key),
    ]
    if pipeline.export is not None:
        tasks.append(m.DAGTask(name=EXPORT, template=EXPORT, dependencies=[EVALUATE], arguments=key))
    return m.Template(name=ENTRYPOINT, dag=m.DAGTemplate(tasks=tasks))


def build_pipeline_workflow(pipeline: Pipeline) -> Workflow:
    """The Hera ``Workflow`` that runs ``pipeline``."""
    steps = "train, evaluate" + (", export" if pipeline.export else "")
    prefix = key_prefix(pipeline.namespace, pipeline.name, None)
    description = f"DIJob {pipeline.job.name} as {pipeline.job_name}: {steps} its stored {pipeline.policy}"
    return Workflow(
        api_version="argoproj.io/v1alpha1",
        kind="Workflow",
        name=pipeline.name,
        namespace=pipeline.namespace,
        labels={**MANAGED_BY, LABEL_EXPERIMENT: pipeline.name},
        annotations={
            ANNOTATION_WORKFLOW_TITLE: f"Pipeline {pipeline.name}",
            ANNOTATION_WORKFLOW_DESCRIPTION: description,
        },
        entrypoint=ENTRYPOINT,
        service_account_name=pipeline.service_account,
        node_selector=dict(pipeline.node_selector) if pipeline.node_selector else None,
        tolerations=tolerations(pipeline.tolerations),
        templates=[
            _dag(pipeline),
            _train(pipeline),
            _locate(pipeline),
            _step(EVALUATE, pipeline.evaluate, prefix),
            *([_step(EXPORT, pipeline.export, prefix)] if pipeline.export else []),
        ],
    )
