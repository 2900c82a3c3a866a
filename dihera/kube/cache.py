"""Watch-backed caches for the di-server: list once, then follow a watch (no API call per GET).

One :class:`Informer` per resource runs in a daemon thread: list (remember the resourceVersion),
watch from there, apply events to an in-memory map of plain dicts, and list again when the watch
expires (410 Gone) or fails. :class:`JobCache` holds the three a job needs: DIJobs, membership
ConfigMaps and pods (indexed by job), cluster-wide or once per watched namespace.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from dihera.constants import LABEL_JOB, MANAGED_BY
from dihera.kube.responses import decoded
from dihera.naming import membership_configmap_name
from dihera.schema import GROUP, PLURAL, VERSION

__all__ = ["CachedJob", "Informer", "JobCache"]

log = logging.getLogger(__name__)
Key = tuple[str, str]


class Informer:
    """An in-memory copy of one kind of object, kept current by list + watch."""

    def __init__(
        self,
        kind: str,
        list_call: Callable[..., Any],
        watch_seconds: int = 240,
        index: Callable[[Mapping[str, Any]], Key] | None = None,
        **params: Any,
    ) -> None:
        """``index``: a secondary key (e.g. a pod's job) that :meth:`indexed` looks objects up by."""
        self.kind = kind
        self._list = list_call
        self._params = params
        self._watch_seconds = watch_seconds
        self._index_of = index
        self._items: dict[Key, dict[str, Any]] = {}
        self._index: dict[Key, dict[Key, dict[str, Any]]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.synced = threading.Event()
        self._watch: watch.Watch | None = None
        self._thread = threading.Thread(target=self._run, name=f"informer-{kind}", daemon=True)

    def start(self) -> Informer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._watch is not None:
            self._watch.stop()  # type: ignore[no-untyped-call]

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        with self._lock:
            return self._items.get((namespace, name))

    def select(self, predicate: Callable[[Mapping[str, Any]], bool]) -> list[dict[str, Any]]:
        with self._lock:
            return [o for o in self._items.values() if predicate(o)]

    def indexed(self, key: Key) -> list[dict[str, Any]]:
        """Objects whose ``index`` key is ``key`` (needs ``index``)."""
        with self._lock:
            return list(self._index.get(key, {}).values())

    def _put(self, obj: dict[str, Any]) -> None:  # under the lock
        key = _key(obj)
        self._drop(key)
        self._items[key] = obj
        if self._index_of is not None:
            self._index.setdefault(self._index_of(obj), {})[key] = obj

    def _drop(self, key: Key) -> None:  # under the lock
        old = self._items.pop(key, None)
        if old is not None and self._index_of is not None:
            bucket = self._index.get(self._index_of(old), {})
            bucket.pop(key, None)
            if not bucket:
                self._index.pop(self._index_of(old), None)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                version = self._relist()
                self.synced.set()
                while not self._stop.is_set():
                    version = self._follow(version)
            except ApiException as err:
                if err.status != 410 and not self._stop.is_set():
                    log.warning("%s informer: %s; listing again", self.kind, err.reason)
                    self._stop.wait(1.0)
            except Exception as err:  # keep the cache alive through network errors
                if self._stop.is_set():
                    return
                log.warning("%s informer: %s; listing again", self.kind, err)
                self._stop.wait(1.0)

    def _relist(self) -> str:
        resp = self._list(_preload_content=False, **self._params)
        data = decoded(resp)
        with self._lock:
            self._items, self._index = {}, {}
            for obj in data.get("items") or []:
                self._put(obj)
        return str(data["metadata"]["resourceVersion"])

    def _follow(self, version: str) -> str:
        self._watch = watch.Watch()  # type: ignore[no-untyped-call]
        for event in self._watch.stream(  # type: ignore[no-untyped-call]
            self._list,
            resource_version=version,
            timeout_seconds=self._watch_seconds,
            allow_watch_bookmarks=True,
            deserialize=False,
            **self._params,
        ):
            obj = event["object"]
            version = str(obj["metadata"].get("resourceVersion") or version)
            if event["type"] == "BOOKMARK":
                continue
            with self._lock:
                if event["type"] == "DELETED":
                    self._drop(_key(obj))
                else:
                    self._put(obj)
        return version


def _key(obj: Mapping[str, Any]) -> Key:
    meta = obj["metadata"]
    return str(meta.get("namespace") or ""), str(meta["name"])


@dataclass(frozen=True)
class CachedJob:
    """A job as the cache sees it: the DIJob, its membership ConfigMap (None before it starts), its pods."""

    body: Mapping[str, Any]
    configmap: Mapping[str, Any] | None
    pods: tuple[Mapping[str, Any], ...]


class _Scope:
    """The three informers of one namespace (or of the whole cluster, ``namespace`` None)."""

    def __init__(self, api: client.ApiClient, namespace: str | None) -> None:
        custom, core = client.CustomObjectsApi(api), client.CoreV1Api(api)
        managed = ",".join(f"{k}={v}" for k, v in MANAGED_BY.items())
        where = f"{namespace}/" if namespace else ""
        if namespace:
            self.jobs = Informer(
                f"{where}dijobs",
                custom.list_namespaced_custom_object,
                group=GROUP,
                version=VERSION,
                namespace=namespace,
                plural=PLURAL,
            )
            self.configmaps = Informer(
                f"{where}configmaps",
                core.list_namespaced_config_map,
                namespace=namespace,
                label_selector=f"{managed},{LABEL_JOB}",
            )
            self.pods = Informer(
                f"{where}pods", core.list_namespaced_pod, namespace=namespace, label_selector=LABEL_JOB, index=_job_of
            )
        else:
            self.jobs = Informer(
                "dijobs", custom.list_cluster_custom_object, group=GROUP, version=VERSION, plural=PLURAL
            )
            self.configmaps = Informer(
                "configmaps", core.list_config_map_for_all_namespaces, label_selector=f"{managed},{LABEL_JOB}"
            )
            self.pods = Informer("pods", core.list_pod_for_all_namespaces, label_selector=LABEL_JOB, index=_job_of)
        self.informers = (self.jobs, self.configmaps, self.pods)


def _job_of(pod: Mapping[str, Any]) -> Key:
    meta = pod["metadata"]
    return str(meta.get("namespace") or ""), str((meta.get("labels") or {}).get(LABEL_JOB) or "")


class JobCache:
    """DIJobs, their membership ConfigMaps and their pods: cluster-wide, or one set of watches per namespace.

    Per namespace, a Role in each is enough (no cluster-wide list); a job outside them is not found.
    """

    def __init__(self, api: client.ApiClient, namespaces: Sequence[str] = ()) -> None:
        self._scopes: dict[str | None, _Scope] = {ns: _Scope(api, ns) for ns in (tuple(namespaces) or (None,))}
        self._all = tuple(i for scope in self._scopes.values() for i in scope.informers)

    def start(self) -> JobCache:
        for informer in self._all:
            informer.start()
        return self

    def stop(self) -> None:
        for informer in self._all:
            informer.stop()

    def ready(self) -> bool:
        return all(i.synced.is_set() for i in self._all)

    def wait_ready(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        return all(i.synced.wait(max(0.0, deadline - time.monotonic())) for i in self._all)

    def job(self, namespace: str, name: str) -> CachedJob | None:
        scope = self._scopes.get(namespace) or self._scopes.get(None)
        if scope is None:
            return None
        body = scope.jobs.get(namespace, name)
        if body is None:
            return None
        configmap = scope.configmaps.get(namespace, membership_configmap_name(name))
        return CachedJob(body, configmap, tuple(scope.pods.indexed((namespace, name))))
