"""Peers before main: the init container rendered first into every replica's pod (pure).

It runs ``dihera wait-peers`` (:mod:`dihera.cli.peers`) from the project's image, so no replica's
containers start before its own FQDN and every lower rank's resolve; bounded by the DIJob's
annotation ``diengine/peer-wait-timeout`` or else ``RenderSettings.peer_wait_timeout`` (0: not
rendered). Hardened like the chart's containers: non-root, read-only root, no capabilities.
"""

from __future__ import annotations

from hera.workflows import models as m

from dihera.constants import ANNOTATION_PEER_WAIT_TIMEOUT, PEER_WAIT_CONTAINER
from dihera.model import DIJob
from dihera.naming import membership_configmap_name
from dihera.peers import parse_timeout
from dihera.render.env import NODES_KEY, RANK
from dihera.render.settings import RenderSettings

__all__ = ["NONROOT_UID", "RESOURCES", "peer_wait_container", "peer_wait_timeout"]

#: The image's user (the Dockerfile's); set on the container so a pod-level runAsUser: 0 cannot clash.
NONROOT_UID = 65532
#: Small: the process resolves a few names. The CPU limit is not lower so that Python's start-up is
#: not throttled (the wait must not slow a job whose peers are up: bench/bench_peer_wait.py).
RESOURCES = {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"cpu": "500m", "memory": "64Mi"}}


def peer_wait_timeout(job: DIJob, settings: RenderSettings) -> int:
    """Seconds each replica waits: the job's annotation (validated) when set, else the settings'."""
    value = job.annotations.get(ANNOTATION_PEER_WAIT_TIMEOUT)
    return parse_timeout(value) if value is not None else settings.peer_wait_timeout


def _quantities(values: dict[str, str]) -> dict[str, m.Quantity]:
    return {name: m.Quantity(value) for name, value in values.items()}


def peer_wait_container(job: DIJob, settings: RenderSettings) -> m.UserContainer | None:
    """The ``dihera-wait-peers`` init container of ``job``'s replicas; None when the wait is off."""
    timeout = peer_wait_timeout(job, settings)
    if timeout == 0:
        return None
    nodes = m.ConfigMapKeySelector(name=membership_configmap_name(job.name), key=NODES_KEY)
    return m.UserContainer(
        name=PEER_WAIT_CONTAINER,
        image=settings.peer_wait_image,
        image_pull_policy=settings.peer_wait_image_pull_policy,
        command=["dihera", "wait-peers", "--timeout", str(timeout)],
        env=[
            m.EnvVar(name="DI_RANK", value=RANK),
            m.EnvVar(name=NODES_KEY, value_from=m.EnvVarSource(config_map_key_ref=nodes)),
        ],
        resources=m.ResourceRequirements(
            requests=_quantities(RESOURCES["requests"]), limits=_quantities(RESOURCES["limits"])
        ),
        security_context=m.SecurityContext(
            run_as_non_root=True,
            run_as_user=NONROOT_UID,
            run_as_group=NONROOT_UID,
            read_only_root_filesystem=True,
            allow_privilege_escalation=False,
            capabilities=m.Capabilities(drop=["ALL"]),
            seccomp_profile=m.SeccompProfile(type="RuntimeDefault"),
        ),
        termination_message_policy="FallbackToLogsOnError",  # the timeout's message in the pod's status
    )
