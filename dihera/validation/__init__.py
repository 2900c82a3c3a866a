"""Validate a DIJob and build the typed :class:`~dihera.model.DIJob` (pure).

The CRD refuses a bad DIJob at admission with its schema and its CEL ``x-kubernetes-validations``; here the same
rules, and those the CRD cannot express, report **all** problems at once, each naming the field path, the bad
value and what would be valid. :func:`validate` runs them; :func:`load_job` builds the typed job from a valid one.
One module per concern:

- ``structure``: identity (apiVersion, kind, metadata), the schema checked strictly (an unknown field names the
  nearest valid one), the schema's defaults, the careful readers the rules share
- ``tasks``: task names and types, replicas against min/maxReplicas
- ``names``: the names a job makes and their sizes: the job's name, pod hostnames, short hostnames
- ``lifecycle``: successPolicy, failurePolicy, the checkpoint, the annotations that hold seconds
- ``autoscaling``: collector autoscaling and the training policy
- ``pods``: pod templates and volumes against core/v1, the container name dihera takes
- ``cel``: the CRD's CEL rules, each mapped to its Python twin (the ``cel_*`` functions of the modules above)
- ``build``: the typed DIJob from a valid, defaulted one

Rules of other modules it runs: the environment's size (:mod:`dihera.env_limits`), the task order
(:mod:`dihera.node_ids`), the names dihera adds to every pod (:mod:`dihera.reserved`), ``spec.artifacts``
(:mod:`dihera.artifacts`), the env providers (:mod:`dihera.render.providers`). The objects beside DIJobs in a file
are :mod:`dihera.documents`'.
"""

from __future__ import annotations

from collections.abc import Mapping

from dihera.artifacts import artifact_problems
from dihera.env_limits import env_size_problems
from dihera.errors import InvalidJobError, Problem, format_value
from dihera.model import DIJob
from dihera.node_ids import none_before_ditask_problems
from dihera.render.providers import provider_problems
from dihera.reserved import reserved_problems
from dihera.validation.autoscaling import autoscaling_problems
from dihera.validation.build import DEFAULT_NAMESPACE, typed_job
from dihera.validation.cel import twin_problems
from dihera.validation.lifecycle import checkpoint_problems, checkpoint_tasks, seconds_annotation_problems
from dihera.validation.names import MAX_HOSTNAME, job_name_problems, short_hostname_problems
from dihera.validation.pods import reserved_container_problems, template_problems, volume_problems
from dihera.validation.structure import Defaulted, apply_defaults, arr, identity_problems, obj, structure_problems

__all__ = ["DEFAULT_NAMESPACE", "MAX_HOSTNAME", "apply_defaults", "checkpoint_tasks", "load_job", "validate"]


def _started(manifest: Mapping[str, object]) -> bool:
    """Whether the controller has taken the job up (``status.phase`` set)."""
    status = manifest.get("status")
    return isinstance(status, Mapping) and bool(status.get("phase"))


def validate(manifest: object) -> list[Problem]:
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
    problems = identity_problems(manifest) + job_name_problems(manifest) + structure_problems(manifest)
    defaulted = apply_defaults(manifest)
    spec = defaulted.get("spec")
    if not isinstance(spec, Mapping):
        return problems
    name = obj(defaulted.get("metadata")).get("name")
    job = Defaulted(name if isinstance(name, str) else "", spec)
    problems += twin_problems(job)  # the CRD's CEL rules
    if not _started(manifest):  # a running job's growth is checked by its scaling plan, on the exact membership
        problems += env_size_problems(job.name, spec) + short_hostname_problems(job)
        problems += none_before_ditask_problems(arr(spec.get("tasks")))
        problems += reserved_problems(spec, checkpoint_tasks(spec))
    problems += checkpoint_problems(job) + provider_problems(arr(spec.get("tasks")))
    problems += seconds_annotation_problems(manifest) + reserved_container_problems(spec.get("tasks"))
    problems += template_problems(arr(spec.get("tasks"))) + autoscaling_problems(job)
    problems += volume_problems(arr(spec.get("volumes"))) + artifact_problems(spec, checkpoint_tasks(spec))
    return sorted(set(problems))


def load_job(manifest: object, namespace: str | None = None, source: str = "DIJob") -> DIJob:
    """Validate ``manifest`` and return the typed job; raise :class:`InvalidJobError` listing every problem.

    ``namespace`` fills in ``metadata.namespace`` when the manifest has none (``default`` otherwise).
    """
    problems = validate(manifest)
    if problems:
        raise InvalidJobError(problems, source)
    return typed_job(apply_defaults(obj(manifest)), namespace)  # valid: an object
