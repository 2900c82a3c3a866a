"""The controller: DIJob → ConfigMap, Service, Argo Workflow; Workflow + pods → DIJob status.

Runtime (I/O):

- ``run``: assembles the pieces and runs them while this replica holds the Lease (``settings``: its one
  settings object; ``endpoints``: ``/metrics``, ``/readyz``, ``/healthz``; ``metrics``)
- ``triggers``: which watch event (:mod:`dihera.kube.watch`) queues which job, and when
- ``workqueue``: the jobs to reconcile, one pass per job at a time, retries with backoff (``wakeups``: timed passes)
- ``reconcile``: one pass as a recipe: observe → converge → decide → apply
- ``observe``: a job's objects read into one view (the watch cache, the API server when it must); ``validated``
- ``autoscaler``: collector autoscaling: each job's series of RL figures, a change through the scaler
- ``apply``: the writes of a pass (objects, the scaler, the status, Events, what follows the status)
- ``kueue``: a queued job's Kueue Workload, read and written; ``shrink``: collectors of lower-priority jobs
  given back before a Workload would make Kueue preempt, and taken back when the quota is free

Decisions (pure, :mod:`dihera.controller.decide`): the view, the facts worked out of it, the phase
policies, the status, and one module per lifecycle concern (hold, failures, success, training,
deadline, cleanup).
"""

from __future__ import annotations

from dihera.controller.decide.status import StatusUpdate, compute_status
from dihera.controller.decide.view import JobView
from dihera.controller.settings import ControllerSettings

__all__ = ["ControllerSettings", "JobView", "StatusUpdate", "compute_status"]
