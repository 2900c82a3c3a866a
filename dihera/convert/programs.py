"""Programs that cannot train under dihera as they are: DI-engine's old ``ding -m dist`` pipeline (pure).

Its coordinator gets collectors and learners only from DI-orchestrator's ``/v1alpha1/replicas`` API
(``ding/utils/k8s_helper.py``, ``ding/worker/coordinator/operator_server.py`` in DI-engine), which
dihera's di-server does not serve, and its components exchange the config, data and policies through a
shared filesystem. A converted job running it would be applied, start, and never train: ``dihera
convert`` refuses it (an error) unless asked to convert it as it is (then a warning).
"""

from __future__ import annotations

from collections.abc import Mapping

from dihera.convert.scan import dist_pipeline_fields, server_requests

__all__ = ["ALLOW_FLAG", "MIGRATION", "old_pipeline"]

ALLOW_FLAG = "--allow-v1alpha1-programs"
MIGRATION = 'docs/migration.md, "From `ding -m dist` to `ditask`"'

_NEEDS_API = (
    "runs DI-engine's old `ding -m dist` pipeline, which cannot train under dihera: its coordinator gets "
    "its collectors and learners only from DI-orchestrator's v1alpha1 API (/v1alpha1/replicas at "
    "di-server.di-system:8080), which dihera does not serve, and its components exchange the config, data "
    "and policies through a shared filesystem. Move it to `ditask` ({migration})"
)
_NEEDS_ADDRESSES = (
    "runs DI-engine's old `ding -m dist` pipeline: without DI-orchestrator's v1alpha1 API its coordinator "
    "needs the collectors' and learners' addresses written in its config (they are in DI_<TASK>_NODES) "
    "and its components a shared filesystem; `ditask` needs neither ({migration})"
)


def old_pipeline(document: Mapping[str, object], v1alpha1: bool) -> tuple[str, str, bool] | None:
    """``(field, message, fatal)`` when the job runs ``ding -m dist``: fatal when it needs the v1alpha1
    API (a v1alpha1 job, whose collectors and learners that API created, or a DI-engine config naming
    ``operator_server`` / ``system_addr``); None when it does not run that pipeline."""
    dist, server = dist_pipeline_fields(document), server_requests(document)
    if server or (v1alpha1 and dist):
        return (dist or server)[0], _NEEDS_API.format(migration=MIGRATION), True
    if dist:
        return dist[0], _NEEDS_ADDRESSES.format(migration=MIGRATION), False
    return None
