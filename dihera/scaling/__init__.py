"""Scaling a running job: what a request asks, the plan, the Workflow patch, the DIJob patch (pure), and the
use case applying them through small Protocols.

The job's membership ConfigMap is the commitment; the Workflow is converged to it (measured on Argo
v3.7.18 and v4.1.4, see docs/scaling.md). The parts, each a module named for its job:

- :mod:`~dihera.scaling.request`: what a scale request asks (``ScaleRequest``);
- :mod:`~dihera.scaling.dag`: the Workflow's DAG as scaling sees it (live slots, retired tombstones);
- :mod:`~dihera.scaling.plan`: the new counts and membership (``plan_scale``), refusals as typed errors;
- :mod:`~dihera.scaling.workflow_patch`: the JSON patch converging the Workflow;
- :mod:`~dihera.scaling.retired_pods`: the pods of retired replicas, deleted once Argo finished their tombstone;
- :mod:`~dihera.scaling.spec_patch`: the DIJob's stamp and the patch writing counts and stamp;
- :mod:`~dihera.scaling.spec_edit`: whether a hand edit of the spec is to be applied or caught up;
- :mod:`~dihera.scaling.executor`: the use case applying a request (``ScaleExecutor``): per-job locks, the
  order of writes, Kueue's quota, retries of lost resourceVersion races;
- :mod:`~dihera.scaling.retire`: its last step, deleting retired replicas' pods during a bounded watch;
- :mod:`~dihera.scaling.ports`: what the use case needs of the cluster, as small Protocols.

The use case does no I/O of its own: :mod:`dihera.kube.scale_executor` implements the ports with API calls
and wires them in as ``JobScaler``, the one entry point the di-server, ``dihera scale`` and the controller use.
The executor and its ports are imported from their modules (not re-exported here: the package's pure parts
stay light for the watch layer and the controller's decisions).
"""

from __future__ import annotations

from dihera.errors import ScaleError
from dihera.scaling.dag import RETIRED_TEMPLATE, DagSlots, live_replicas, read_dag, retired_dag_tasks
from dihera.scaling.plan import ScalePlan, plan_scale, target_counts
from dihera.scaling.request import Action, ScaleRequest
from dihera.scaling.retired_pods import RetiredPods, retired_pods
from dihera.scaling.spec_edit import EditAction, SpecEdit, plan_spec_edit
from dihera.scaling.spec_patch import (
    GENERATION_ANNOTATION,
    job_spec_patch,
    spec_generation,
    spec_is_current,
    stamp_patch,
)
from dihera.scaling.workflow_patch import workflow_patch

__all__ = [
    "GENERATION_ANNOTATION",
    "RETIRED_TEMPLATE",
    "Action",
    "DagSlots",
    "EditAction",
    "RetiredPods",
    "ScaleError",
    "ScalePlan",
    "ScaleRequest",
    "SpecEdit",
    "job_spec_patch",
    "live_replicas",
    "plan_scale",
    "plan_spec_edit",
    "read_dag",
    "retired_dag_tasks",
    "retired_pods",
    "spec_generation",
    "spec_is_current",
    "stamp_patch",
    "target_counts",
    "workflow_patch",
]
