"""Render a DIJob into the objects the cluster needs (pure, deterministic).

Same job, membership and settings: byte-identical output. No clock, environment or I/O.
Importing this package is cheap; Hera is loaded by the first :func:`render`.

- ``workflow``: the Argo Workflow (Hera), one DAG node per replica; ``objects``: the headless Service,
  the membership ConfigMap and the checkpoint claim; ``checkpoint``: the checkpoint volume in the pods that
  mount it; ``outputs``: a task's spec.artifacts as its replicas' output artifacts; ``env``: every
  container's ``DI_*`` environment (``providers``: a framework's own); ``peer_wait``: the init container that
  waits for the peers; ``strict``: Hera models from the user's dicts; ``settings``: what rendering needs
  besides the job
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dihera.membership import Membership, plan_membership
from dihera.model import DIJob
from dihera.render.env import node_lists
from dihera.render.objects import (
    ClaimObject,
    ConfigMapObject,
    ServiceObject,
    checkpoint_claim,
    membership_configmap,
    service,
)
from dihera.render.settings import RenderSettings

__all__ = ["RenderSettings", "RenderedJob", "node_lists", "render"]


@dataclass(frozen=True)
class RenderedJob:
    """Everything a job needs, in creation order: membership ConfigMap, Service, checkpoint claim, Workflow."""

    membership: Membership
    configmap: ConfigMapObject
    service: ServiceObject
    workflow: dict[str, Any]
    #: The checkpoint volume's claim (``spec.checkpoint``), made before the Workflow whose pods mount it.
    claim: ClaimObject | None = None

    def objects(self) -> list[ConfigMapObject | ServiceObject | ClaimObject | dict[str, Any]]:
        return [self.configmap, self.service, *([self.claim] if self.claim else []), self.workflow]


def render(
    job: DIJob,
    settings: RenderSettings | None = None,
    membership: Membership | None = None,
) -> RenderedJob:
    """Render ``job``; ``membership`` defaults to the job's first membership (spec order ranks)."""
    from dihera.render.workflow import build_workflow  # Hera's models: loaded only when rendering

    settings = settings or RenderSettings()
    membership = membership or plan_membership(job, None)
    return RenderedJob(
        membership=membership,
        configmap=membership_configmap(job, membership, settings),
        service=service(job),
        workflow=build_workflow(job, membership, settings).to_dict(),
        claim=checkpoint_claim(job),
    )
