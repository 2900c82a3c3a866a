"""Where a reconcile reads a job's objects: the watch cache (steady state) or the API server (confirmation).

Both answer the same four questions; :class:`CachedReads` costs no request, :class:`LiveReads` one GET or
LIST each. The reconciler reads from the cache and goes to the API server only when the cache cannot
be trusted to be current enough for the decision at hand (docs/controller.md, "Reading from watches").
"""

from __future__ import annotations

from typing import Any, Protocol

from dihera.constants import LABEL_JOB
from dihera.kube.watch import Store

__all__ = ["CachedReads", "JobReader", "LiveReads", "ObjectReader", "Reads"]


class JobReader(Protocol):
    def get(self, namespace: str, name: str) -> dict[str, Any] | None: ...


class ObjectReader(Protocol):
    def get_configmap(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    def get_workflow(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    def list_pods(self, namespace: str, selector: str) -> list[dict[str, Any]]: ...


class Reads(Protocol):
    #: True when answers come from the watch cache (possibly behind the API server).
    cached: bool

    def dijob(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    def configmap(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    def workflow(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    def pods(self, namespace: str, job: str) -> list[dict[str, Any]]: ...


class LiveReads:
    """Reads through the API (``JobStore`` and ``ObjectStore``)."""

    cached = False

    def __init__(self, jobs: JobReader, objects: ObjectReader) -> None:
        self._jobs, self._objects = jobs, objects

    def dijob(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._jobs.get(namespace, name)

    def configmap(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._objects.get_configmap(namespace, name)

    def workflow(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._objects.get_workflow(namespace, name)

    def pods(self, namespace: str, job: str) -> list[dict[str, Any]]:
        return self._objects.list_pods(namespace, f"{LABEL_JOB}={job}")


class CachedReads:
    """Reads from the watch layer's :class:`~dihera.kube.watch.Store`."""

    cached = True

    def __init__(self, cache: Store) -> None:
        self.cache = cache

    def dijob(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.cache.get("DIJob", namespace, name)

    def configmap(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.cache.get("ConfigMap", namespace, name)

    def workflow(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.cache.get("Workflow", namespace, name)

    def pods(self, namespace: str, job: str) -> list[dict[str, Any]]:
        return self.cache.pods(namespace, job)

    def workload(self, namespace: str, name: str) -> dict[str, Any] | None:
        """A Kueue Workload the watches delivered (watched only with ``--kueue``)."""
        return self.cache.get("Workload", namespace, name)
