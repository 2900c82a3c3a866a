"""The controller's reconciler over test doubles: one fake store plays the API server (DIJobs and the job's
objects), the Event recorder and the scaler."""

from __future__ import annotations

from typing import Any

from dihera.controller.apply import Applier
from dihera.controller.metrics import Metrics
from dihera.controller.reconcile import Reconciler
from dihera.render import RenderSettings


def reconciler(store: Any, metrics: Metrics | None = None, **kw: Any) -> Reconciler:
    """A :class:`Reconciler` whose reads and writes all go to ``store`` (``kw``: the Reconciler's own:
    ``clock``, ``cache``, ``queueing``, ``progress_batch``...)."""
    metrics = metrics or Metrics()
    applier = Applier(store, store, store, store, metrics, RenderSettings(), cache=kw.get("cache"))
    return Reconciler(applier, metrics, **kw)
