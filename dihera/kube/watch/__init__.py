"""The watch layer: what the controller and the di-server know of the cluster, kept current by watches.

- ``informer``: list, then watch, one kind in one scope, in a thread of its own (client-go's Reflector,
  over raw JSON)
- ``store``: the latest slim copy of every watched object, indexed by the job it belongs to; the
  controller's own writes told apart from news
- ``slim``: what the store keeps of each kind
- ``kinds``: where each kind lives in the API, its label selector
- ``watches``: which kinds are watched in which namespaces (named, every one, or patterns), started
  with their scope or on demand
"""

from __future__ import annotations

from dihera.kube.watch.kinds import KINDS, JobKey, managed_job_selector
from dihera.kube.watch.store import Store, job_of
from dihera.kube.watch.watches import Scopes, Watches

__all__ = ["KINDS", "JobKey", "Scopes", "Store", "Watches", "job_of", "managed_job_selector"]
