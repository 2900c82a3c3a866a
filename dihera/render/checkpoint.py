"""The job's checkpoint volume (``spec.checkpoint``, docs/checkpoints.md) in the pods of the tasks that mount it
(pure): the pod volume and the mounts (``DI_CHECKPOINT_DIR``, with every other variable, is
:func:`dihera.render.env.di_env`'s).

Its claim (:func:`dihera.render.objects.checkpoint_claim`) is one PersistentVolumeClaim per job,
``di-<job>-checkpoints``, owned by the DIJob (reclaimPolicy Delete) or by nobody (Retain), never by the
Workflow: deleting the Workflow (spec.suspend, Kueue's eviction) or a pod (a restart in place) leaves it,
and the replicas made again mount the same one.
"""

from __future__ import annotations

from dihera.constants import CHECKPOINT_VOLUME
from dihera.model import DIJob, Task
from dihera.naming import checkpoint_claim_name

__all__ = ["checkpoint_mounts", "checkpoint_volumes"]


def _mounts(job: DIJob, task: Task) -> bool:
    return job.checkpoint is not None and job.checkpoint.mounted_by(task.name)


def checkpoint_volumes(job: DIJob, task: Task) -> list[dict[str, object]]:
    """The pod volume of the claim, in the pods of a task that mounts it."""
    if not _mounts(job, task):
        return []
    return [{"name": CHECKPOINT_VOLUME, "persistentVolumeClaim": {"claimName": checkpoint_claim_name(job.name)}}]


def checkpoint_mounts(job: DIJob, task: Task) -> list[dict[str, object]]:
    """The claim's mount, in every container and init container of a task that mounts it."""
    if not _mounts(job, task):
        return []
    assert job.checkpoint is not None
    return [{"name": CHECKPOINT_VOLUME, "mountPath": job.checkpoint.mount_path}]
