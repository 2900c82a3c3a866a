"""The status-sync controller: DIJob → ConfigMap, Service, Argo Workflow; Workflow + pods → DIJob status.

Modules: ``replicas``, ``phase``, ``conditions``, ``status``, ``cleanup`` and ``rescale`` are pure decisions;
``reconcile`` observes, applies and writes; ``queue`` serialises work per job; ``handlers`` wires
kopf; ``run``/``settings``/``cli`` are the entry point; ``metrics``/``server``/``logs`` operations.
"""

from __future__ import annotations

from dihera.controller.settings import ControllerSettings
from dihera.controller.status import Observation, StatusUpdate, compute_status

__all__ = ["ControllerSettings", "Observation", "StatusUpdate", "compute_status"]
