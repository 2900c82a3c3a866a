"""Reads and writes of the objects a DIJob owns: ConfigMap, Service, Argo Workflow and pods.

Every call names the object in its errors; "already exists" and "not found" are answers, not errors.
"""

from __future__ import annotations

import math
from collections.abc import Generator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import cast

from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from dihera.kube.responses import decoded, discard
from dihera.objects import metadata

__all__ = [
    "DELETE_CONCURRENCY",
    "WORKFLOW_GROUP",
    "WORKFLOW_PLURAL",
    "WORKFLOW_VERSION",
    "ObjectStore",
]

WORKFLOW_GROUP = "argoproj.io"
WORKFLOW_VERSION = "v1alpha1"
WORKFLOW_PLURAL = "workflows"
#: Pod deletions in flight at once (:meth:`ObjectStore.delete_pods`).
DELETE_CONCURRENCY = 8


def _missing(err: ApiException) -> bool:
    return bool(err.status == 404)


class ObjectStore:
    """Typed access to a job's objects through one API client (no I/O until a method is called)."""

    def __init__(self, api: client.ApiClient) -> None:
        self._api = api
        self._core = client.CoreV1Api(api)
        self._custom = client.CustomObjectsApi(api)

    # -- reads -----------------------------------------------------------------------------------

    def get_configmap(self, namespace: str, name: str) -> dict[str, object] | None:
        try:
            obj = self._core.read_namespaced_config_map(name, namespace, _preload_content=False)
        except ApiException as err:
            if _missing(err):
                return None
            raise
        return decoded(obj)

    def get_workflow(self, namespace: str, name: str) -> dict[str, object] | None:
        try:
            obj = self._custom.get_namespaced_custom_object(
                WORKFLOW_GROUP, WORKFLOW_VERSION, namespace, WORKFLOW_PLURAL, name
            )
        except ApiException as err:
            if _missing(err):
                return None
            raise
        return _as_dict(obj)

    def get_service(self, namespace: str, name: str) -> dict[str, object] | None:
        try:
            obj = self._core.read_namespaced_service(name, namespace, _preload_content=False)
        except ApiException as err:
            if _missing(err):
                return None
            raise
        return decoded(obj)

    def list_workflows(self, namespace: str, selector: str) -> list[dict[str, object]]:
        """Workflows matching a label selector."""
        found = self._custom.list_namespaced_custom_object(
            WORKFLOW_GROUP, WORKFLOW_VERSION, namespace, WORKFLOW_PLURAL, label_selector=selector
        )
        return _items(_as_dict(found))

    def watch_workflow(
        self, namespace: str, name: str, after: str, seconds: float
    ) -> Generator[dict[str, object], None, None]:
        """The Workflow as each write after resourceVersion ``after`` leaves it, for up to ``seconds``.

        One watch of that one object (no polling of a Workflow that may weigh megabytes); it ends when the
        time is up or the Workflow is deleted. A version too old to watch from (410 Gone) is answered with
        one read of the Workflow as it is now.
        """
        stream = watch.Watch()  # type: ignore[no-untyped-call]
        try:
            for event in stream.stream(  # type: ignore[no-untyped-call]
                self._custom.list_namespaced_custom_object,
                WORKFLOW_GROUP,
                WORKFLOW_VERSION,
                namespace,
                WORKFLOW_PLURAL,
                field_selector=f"metadata.name={name}",
                resource_version=after,
                timeout_seconds=max(1, math.ceil(seconds)),
                _request_timeout=seconds + 10,
            ):
                if event["type"] == "DELETED":
                    return
                if event["type"] in ("ADDED", "MODIFIED"):
                    yield _as_dict(event["object"])
        except ApiException as err:
            if err.status != 410:
                raise
            current = self.get_workflow(namespace, name)
            if current is not None:
                yield current
        finally:
            stream.stop()  # type: ignore[no-untyped-call]

    def list_pods(self, namespace: str, selector: str) -> list[dict[str, object]]:
        """Pods matching a label selector, as plain dicts (the API's JSON, camelCase)."""
        resp = self._core.list_namespaced_pod(namespace, label_selector=selector, _preload_content=False)
        return _items(decoded(resp))

    # -- writes ----------------------------------------------------------------------------------

    def create(self, obj: Mapping[str, object]) -> tuple[dict[str, object], bool]:
        """Create a ConfigMap, Service, PersistentVolumeClaim or Workflow; ``(object, created)``. An existing
        object is read back, but a claim: it is returned as given (a claim of that name is the job's, or one a
        DIJob of the same name kept with reclaimPolicy Retain, to be mounted again; nothing of it is read)."""
        kind = str(obj["kind"])
        meta = metadata(obj)
        ns, name = meta["namespace"], meta["name"]
        try:
            resp: object
            if kind == "PersistentVolumeClaim":
                resp = self._core.create_namespaced_persistent_volume_claim(ns, dict(obj), _preload_content=False)  # type: ignore[arg-type]
            elif kind == "ConfigMap":
                resp = self._core.create_namespaced_config_map(ns, dict(obj), _preload_content=False)  # type: ignore[arg-type]
            elif kind == "Service":
                resp = self._core.create_namespaced_service(ns, dict(obj), _preload_content=False)  # type: ignore[arg-type]
            elif kind == "Workflow":
                created = self._custom.create_namespaced_custom_object(
                    WORKFLOW_GROUP, WORKFLOW_VERSION, ns, WORKFLOW_PLURAL, dict(obj)
                )
                return _as_dict(created), True
            else:
                raise ValueError(f"cannot create {kind} {ns}/{name}: unsupported kind")
        except ApiException as err:
            if err.status != 409:
                raise
            if kind == "PersistentVolumeClaim":
                return dict(obj), False
            return self._read_existing(kind, ns, name), False
        return decoded(resp), True

    def _read_existing(self, kind: str, namespace: str, name: str) -> dict[str, object]:
        if kind == "Workflow":
            found = self.get_workflow(namespace, name)
        elif kind == "ConfigMap":
            found = self.get_configmap(namespace, name)
        else:
            found = decoded(self._core.read_namespaced_service(name, namespace, _preload_content=False))
        if found is None:  # deleted between our create and read: report the conflict as is
            raise RuntimeError(f"{kind} {namespace}/{name} exists but cannot be read")
        return found

    def put_back(
        self, kind: str, obj: Mapping[str, object], fields: Mapping[str, Mapping[str, object]]
    ) -> dict[str, object] | None:
        """Write ``fields`` (top-level: ``spec`` of a Service, merged; ``data`` of a ConfigMap; ``metadata``)
        over ``obj`` as the API server served it, with its resourceVersion (a 409 when it changed
        meanwhile); None when it is gone."""
        meta = metadata(obj)
        body = {**obj, **fields}
        resp: object
        try:
            if kind == "Service":
                spec = {**_mapping(obj.get("spec")), **fields.get("spec", {})}
                service = {**body, "spec": spec}
                resp = self._core.replace_namespaced_service(
                    meta["name"],
                    meta["namespace"],
                    service,  # type: ignore[arg-type]  # the client sends a dict as it is
                    _preload_content=False,
                )
            elif kind == "ConfigMap":
                resp = self._core.replace_namespaced_config_map(
                    meta["name"],
                    meta["namespace"],
                    body,  # type: ignore[arg-type]
                    _preload_content=False,
                )
            else:
                raise ValueError(f"cannot put {kind} {meta['namespace']}/{meta['name']} back: unsupported kind")
        except ApiException as err:
            if _missing(err):
                return None
            raise
        return decoded(resp)

    def shutdown_workflow(self, namespace: str, name: str, how: str = "Terminate") -> dict[str, object] | None:
        """Ask Argo to stop a Workflow (``spec.shutdown``); the Workflow as patched, or None when it is gone."""
        try:
            patched = self._custom.patch_namespaced_custom_object(
                WORKFLOW_GROUP, WORKFLOW_VERSION, namespace, WORKFLOW_PLURAL, name, {"spec": {"shutdown": how}}
            )
        except ApiException as err:
            if not _missing(err):
                raise
            return None
        return _as_dict(patched)

    def annotate_workflow(
        self, namespace: str, name: str, annotations: Mapping[str, str], resource_version: str
    ) -> dict[str, object] | None:
        """Set ``annotations`` on a Workflow if it is still at ``resource_version`` (a merge patch carrying it:
        the API server answers 409 when another writer came first); the Workflow as patched, or None when it
        is gone or changed since (the caller decides again from the newer version)."""
        patch = {"metadata": {"resourceVersion": resource_version, "annotations": dict(annotations)}}
        try:
            patched = self._custom.patch_namespaced_custom_object(
                WORKFLOW_GROUP, WORKFLOW_VERSION, namespace, WORKFLOW_PLURAL, name, patch
            )
        except ApiException as err:
            if _missing(err) or err.status == 409:
                return None
            raise
        return _as_dict(patched)

    def delete_workflow(self, namespace: str, name: str, uid: str | None = None) -> bool:
        """Delete a Workflow (its pods follow through ownerReferences); False when it was already gone.

        With ``uid``, only that Workflow: one re-created under the same name meanwhile is kept.
        """
        body = client.V1DeleteOptions(
            propagation_policy="Background", preconditions=client.V1Preconditions(uid=uid) if uid else None
        )
        try:
            self._custom.delete_namespaced_custom_object(
                WORKFLOW_GROUP, WORKFLOW_VERSION, namespace, WORKFLOW_PLURAL, name, body=body
            )
        except ApiException as err:
            if _missing(err) or err.status == 409:  # gone, or another Workflow holds the name now
                return False
            raise
        return True

    def delete_pod(self, namespace: str, name: str, uid: str | None = None) -> None:
        """Delete a pod (gone already is fine); with ``uid``, only that pod: one created again under the name
        since it was read (another owner's) is kept (409, a failed precondition, is not an error)."""
        body = client.V1DeleteOptions(preconditions=client.V1Preconditions(uid=uid)) if uid else None
        try:
            discard(self._core.delete_namespaced_pod(name, namespace, body=body, _preload_content=False))
        except ApiException as err:
            if not (_missing(err) or (uid and err.status == 409)):
                raise

    def delete_pods(self, namespace: str, names: Sequence[str], uids: Mapping[str, str] | None = None) -> None:
        """Delete pods, up to :data:`DELETE_CONCURRENCY` requests at a time (a scale-down of 100 replicas
        took 70 s one by one on a loaded machine); the first error is raised once all were tried. ``uids``:
        the uid each pod was decided on by (:meth:`delete_pod`)."""
        uids = uids or {}
        if len(names) <= 1:
            for name in names:
                self.delete_pod(namespace, name, uids.get(name))
            return
        with ThreadPoolExecutor(min(DELETE_CONCURRENCY, len(names)), thread_name_prefix="delete-pod") as pool:
            futures = [pool.submit(self.delete_pod, namespace, name, uids.get(name)) for name in names]
        errors = [e for f in futures if (e := f.exception()) is not None]
        if errors:
            raise errors[0]


def _as_dict(obj: object) -> dict[str, object]:
    """Custom-object calls return the decoded JSON object."""
    return cast(dict[str, object], obj)


def _mapping(value: object) -> Mapping[str, object]:
    return cast(Mapping[str, object], value) if isinstance(value, Mapping) else {}


def _items(found: Mapping[str, object]) -> list[dict[str, object]]:
    """The objects of a list answer (its ``items``)."""
    items = found.get("items")
    return [cast(dict[str, object], i) for i in items if isinstance(i, dict)] if isinstance(items, list) else []
