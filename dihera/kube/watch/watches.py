"""Which objects are watched, where: an :class:`~dihera.kube.watch.informer.Informer` per kind and scope
(a namespace, or every namespace), each feeding the :class:`~dihera.kube.watch.store.Store` before it
tells the owner what changed.

The controller and the di-server both watch through a :class:`Watches`:

- the kinds ``always`` watched start with their scope (the di-server: DIJobs, membership ConfigMaps,
  pods; the controller: DIJobs, and Kueue Workloads with ``--kueue``);
- the kinds watched ``on_demand`` start in a namespace when a job there needs them
  (:meth:`Watches.ready`: the controller's pods, Workflows and membership ConfigMaps) and stop once
  the store holds nothing of the namespace (:meth:`Watches.release_if_idle`);
- scopes come from :class:`Scopes`: named namespaces, every namespace (one watch per kind), or
  patterns (``team-*``, ``!kube-*``), for which the namespaces themselves are watched and a scope is
  started for each one that matches, and stopped when it goes.

A listing (the first, or one after ``410 Gone``) replaces what the store held of its kind in its scope:
objects it lacks are dropped and reported as gone. Then ``on_listed(kind, listed, gone)``; every event
after it ``on_event(kind, type, object)``, in the informer's thread, after the store has it.
"""

from __future__ import annotations

import fnmatch
import functools
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from kubernetes import client

from dihera.kube.watch.informer import Informer
from dihera.kube.watch.kinds import KINDS, JobKey, list_call
from dihera.kube.watch.store import Store
from dihera.objects import metadata

__all__ = ["OnEvent", "OnListed", "Scopes", "Watches"]

log = logging.getLogger("dihera.kube")

#: ``(kind, type, object)`` of a watch event (``ADDED``, ``MODIFIED``, ``DELETED``), after the store has it.
OnEvent = Callable[[str, str, Mapping[str, object]], None]
#: ``(kind, listed, gone)`` of a listing, after the store has it: the objects listed, those it dropped.
OnListed = Callable[[str, Sequence[Mapping[str, object]], Sequence[Mapping[str, object]]], None]
Scope = str | None  # a namespace; None: every namespace


@dataclass(frozen=True)
class Scopes:
    """Where to watch: ``namespaces`` (names, or patterns ``team-*`` and exclusions ``!kube-*``), or every
    namespace when it is empty."""

    namespaces: tuple[str, ...] = ()

    @property
    def cluster_wide(self) -> bool:
        return not self.namespaces

    @property
    def patterns(self) -> bool:
        """Whether a pattern or an exclusion is among them: the namespaces are then watched to find their matches."""
        return any(n.startswith("!") or any(c in n for c in "*?[") for n in self.namespaces)

    def matches(self, namespace: str) -> bool:
        """kopf's rule: a namespace matches if it matches an inclusion (or only exclusions are given) and no
        exclusion."""
        includes = [n for n in self.namespaces if not n.startswith("!")]
        excludes = [n[1:] for n in self.namespaces if n.startswith("!")]
        included = not includes or any(fnmatch.fnmatchcase(namespace, p) for p in includes)
        return included and not any(fnmatch.fnmatchcase(namespace, p) for p in excludes)


class Watches:
    """The informers of the ``always`` and ``on_demand`` kinds over :class:`Scopes`, feeding ``store``."""

    def __init__(
        self,
        api: client.ApiClient,
        store: Store,
        scopes: Scopes,
        always: Sequence[str],
        on_demand: Sequence[str] = (),
        on_event: OnEvent | None = None,
        on_listed: OnListed | None = None,
        on_ready: Callable[[set[JobKey]], None] | None = None,
        watch_seconds: int = 300,
    ) -> None:
        """``on_ready(jobs)``: the on-demand kinds of a namespace are listed; ``jobs`` asked for them before."""
        self._api = api
        self._store = store
        self._scopes = scopes
        self._always = tuple(always)
        self._on_demand = tuple(on_demand)
        self._on_event = on_event or (lambda kind, type_, obj: None)
        self._on_listed = on_listed or (lambda kind, listed, gone: None)
        self._on_ready = on_ready or (lambda jobs: None)
        self._watch_seconds = watch_seconds
        self._lock = threading.Lock()
        #: scope → kind → its informer
        self._informers: dict[Scope, dict[str, Informer]] = {}
        #: scope → the jobs whose :meth:`ready` found the scope's on-demand kinds not yet listed
        self._waiting: dict[Scope, set[JobKey]] = {}
        self._namespaces: Informer | None = None
        self._closed = False

    # -- lifecycle

    def bind(
        self,
        on_event: OnEvent | None = None,
        on_listed: OnListed | None = None,
        on_ready: Callable[[set[JobKey]], None] | None = None,
    ) -> None:
        """Set the callbacks after construction (before :meth:`start`), for an owner that needs the watches first."""
        if on_event is not None:
            self._on_event = on_event
        if on_listed is not None:
            self._on_listed = on_listed
        if on_ready is not None:
            self._on_ready = on_ready

    def start(self) -> Watches:
        """Start the ``always`` kinds' watches of every scope (or the namespaces' watch, for patterns)."""
        if self._scopes.patterns:
            self._namespaces = Informer(
                list_call(self._api, KINDS["Namespace"], None),
                "namespaces",
                on_listed=lambda objects, _version: self._namespaces_listed(objects),
                on_event=self._namespace_event,
                watch_seconds=self._watch_seconds,
            )
            self._namespaces.start()
            return self
        with self._lock:
            for scope in self._static_scopes():
                self._start(scope, self._always)
        return self

    def close(self) -> None:
        with self._lock:
            self._closed = True
            informers = [i for kinds in self._informers.values() for i in kinds.values()]
            self._informers.clear()
            self._waiting.clear()
        if self._namespaces is not None:
            informers.append(self._namespaces)
        for informer in informers:
            informer.stop()

    def synced(self) -> bool:
        """Whether every ``always`` kind of every scope has been listed once (for patterns: the namespaces too)."""
        with self._lock:
            if self._namespaces is not None and not self._namespaces.synced.is_set():
                return False
            informers = [i for kinds in self._informers.values() for k, i in kinds.items() if k in self._always]
        return all(i.synced.is_set() for i in informers)

    def alive(self) -> bool:
        """Every informer's thread runs (or was stopped on purpose): what the controller's liveness reports."""
        with self._lock:
            return all(i.alive for kinds in self._informers.values() for i in kinds.values())

    def wait_synced(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for :meth:`synced`."""
        deadline = time.monotonic() + timeout
        while not self.synced():
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
        return True

    def scopes(self) -> list[str]:
        """The scopes watched (``*`` for every namespace), for logs and tests."""
        with self._lock:
            return sorted(scope or "*" for scope in self._informers)

    def on_demand_scopes(self) -> list[str]:
        """The scopes whose on-demand kinds are watched (``*`` for every namespace)."""
        with self._lock:
            return sorted(
                scope or "*" for scope, kinds in self._informers.items() if any(k in kinds for k in self._on_demand)
            )

    # -- on-demand kinds

    def ready(self, namespace: str, job: str | None = None) -> bool:
        """Whether the store holds the namespace's on-demand kinds as listed; starts their watches if none
        run. When not, ``job`` is handed to ``on_ready`` as soon as the last listing is in."""
        if not self._on_demand:
            return True
        scope = None if self._scopes.cluster_wide else namespace
        with self._lock:
            if self._closed:
                return False
            informers = self._start(scope, self._on_demand)
            synced = all(informers[k].synced.is_set() for k in self._on_demand)
            if not synced and job is not None:
                self._waiting.setdefault(scope, set()).add((namespace, job))
        return synced

    def release_if_idle(self, namespace: str) -> None:
        """Stop the namespace's on-demand watches if the store holds nothing of it (no DIJob, no job's object)."""
        if self._scopes.cluster_wide or not self._on_demand or self._store.holds(namespace):
            return
        with self._lock:
            kinds = self._informers.get(namespace) or {}
            stopped = [kinds.pop(k) for k in self._on_demand if k in kinds]
            self._waiting.pop(namespace, None)
        for informer in stopped:
            informer.stop(wait=0)
        if stopped:
            log.debug("nothing of a job left in %s: stopped watching its jobs' objects", namespace)

    # -- internals

    def _static_scopes(self) -> Iterable[Scope]:
        return (None,) if self._scopes.cluster_wide else self._scopes.namespaces

    def _start(self, scope: Scope, kinds: Sequence[str]) -> dict[str, Informer]:
        """Called with the lock held: start ``kinds``' watches of ``scope`` that do not run (or stopped)."""
        running = self._informers.setdefault(scope, {})
        for kind in kinds:
            if kind in running and not running[kind].stopped:
                continue
            name = f"{kind}s in {scope}" if scope else f"{kind}s"
            informer = Informer(
                list_call(self._api, KINDS[kind], scope),
                name,
                on_listed=functools.partial(self._listed, scope, kind),
                on_event=functools.partial(self._event, scope, kind),
                watch_seconds=self._watch_seconds,
                on_synced=functools.partial(self._synced, scope),
            )
            running[kind] = informer
            informer.start()
            log.debug("watching %s", name)
        return running

    def _stop_scope(self, scope: Scope) -> None:
        with self._lock:
            informers = self._informers.pop(scope, {})
            self._waiting.pop(scope, None)
        for informer in informers.values():
            informer.stop(wait=0)
        if informers:
            log.info("stopped watching namespace %s", scope)

    def _synced(self, scope: Scope) -> None:
        """A kind's first listing is in: if it was the scope's last on-demand one, hand over the jobs that waited."""
        with self._lock:
            kinds = self._informers.get(scope) or {}
            if not self._on_demand or not all(k in kinds and kinds[k].synced.is_set() for k in self._on_demand):
                return
            waiting = self._waiting.pop(scope, set())
        if waiting:
            self._on_ready(waiting)

    def _listed(self, scope: Scope, kind: str, objects: list[dict[str, object]], _version: str) -> None:
        started = self._store.now()
        for obj in objects:
            self._store.put(kind, obj)
        gone = self._store.sweep(kind, scope, {metadata(o).get("uid", "") for o in objects}, started)
        self._on_listed(kind, objects, gone)

    def _event(self, scope: Scope, kind: str, type_: str, obj: dict[str, object]) -> None:
        if type_ == "DELETED":
            self._store.drop(kind, obj)
        else:
            self._store.put(kind, obj)
        self._on_event(kind, type_, obj)

    # -- namespace patterns

    def _namespaces_listed(self, objects: list[dict[str, object]]) -> None:
        names = {metadata(o).get("name", "") for o in objects}
        matching = {name for name in names if self._scopes.matches(name)}
        with self._lock:
            watched = {s for s in self._informers if s is not None}
            for namespace in sorted(matching - watched):
                self._start(namespace, self._always)
        for namespace in sorted(watched - matching):
            self._stop_scope(namespace)

    def _namespace_event(self, type_: str, obj: dict[str, object]) -> None:
        name = metadata(obj).get("name", "")
        if not self._scopes.matches(name):
            return
        if type_ == "DELETED":
            self._stop_scope(name)
            return
        with self._lock:
            if not self._closed and name not in self._informers:
                log.info("watching namespace %s (matches %s)", name, ", ".join(self._scopes.namespaces))
                self._start(name, self._always)
