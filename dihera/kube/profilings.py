"""Record the profiling data a job reports (``status.profilings`` of its DIJob) for the di-server.

The merged map is bounded (:func:`dihera.profilings.bounded_merge`), so the bound is checked against the
DIJob as it is when written: read, merge and check, then a merge patch of the status carrying the read's
``resourceVersion`` (the API server refuses it with 409 if the DIJob changed meanwhile: read again). Two
reports at once can therefore never together push the map past its bound.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from typing import cast

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from dihera.objects import metadata
from dihera.profilings import ProfilingsConflict, bounded_merge
from dihera.schema import GROUP, PLURAL, VERSION

__all__ = ["ATTEMPTS", "PAUSE_CAP", "write_profilings"]

#: Reads and guarded writes before a report gives up (each lost race: another writer changed the DIJob
#: between the read and the write: the controller's status, a scale, another report), and the longest
#: pause between two (jittered, doubling from 20 ms).
ATTEMPTS, PAUSE_CAP = 8, 0.5


def write_profilings(
    api: client.ApiClient,
    namespace: str,
    name: str,
    report: Mapping[str, object],
    cached: Mapping[str, object] | None = None,
) -> bool:
    """Merge ``report`` into ``status.profilings`` (a JSON merge patch) if the merged map stays within its
    bounds (else :class:`~dihera.profilings.ProfilingsError`); False when the DIJob does not exist;
    :class:`~dihera.profilings.ProfilingsConflict` when every attempt lost its race. ``cached``: the DIJob as a
    watch last saw it, checked and written against first (no read; a stale copy only costs a 409 and a read)."""
    custom = client.CustomObjectsApi(api)
    for attempt in range(ATTEMPTS):
        if attempt:
            time.sleep(random.uniform(0, min(PAUSE_CAP, 0.02 * 2**attempt)))
        if attempt == 0 and cached is not None:
            body: Mapping[str, object] = cached
        else:
            try:
                body = cast(
                    dict[str, object], custom.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)
                )
            except ApiException as err:
                if err.status == 404:
                    return False
                raise
        bounded_merge(_profilings(body), report)  # raises when past a bound
        patch = {
            "metadata": {"resourceVersion": metadata(body)["resourceVersion"]},
            "status": {"profilings": dict(report)},
        }
        try:
            custom.patch_namespaced_custom_object_status(GROUP, VERSION, namespace, PLURAL, name, patch)
        except ApiException as err:
            if err.status == 404:
                return False
            if err.status != 409:
                raise
            continue
        return True
    raise ProfilingsConflict(
        f"DIJob {namespace}/{name} changed under each of {ATTEMPTS} attempts to record the report; send it again"
    )


def _profilings(body: Mapping[str, object]) -> Mapping[str, object] | None:
    """``status.profilings`` of a DIJob as read (None: none yet)."""
    status = body.get("status")
    found = status.get("profilings") if isinstance(status, Mapping) else None
    return cast(Mapping[str, object], found) if isinstance(found, Mapping) else None
