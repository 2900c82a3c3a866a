"""``dihera controller``: run the status-sync controller (needs the operator extras)."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dihera.controller.settings import ControllerSettings, LeaderElection
    from dihera.queueing.settings import KueueSettings
    from dihera.render.settings import RenderSettings

__all__ = ["add_kueue_flags", "kueue_settings", "register", "settings_from_args"]


def settings_from_args(args: argparse.Namespace, environ: Mapping[str, str]) -> ControllerSettings:
    """The one settings object: flags first, then the chart's ``DIHERA_*`` variables, then defaults.

    Read at the entry point only: ``DIHERA_SERVER_URL``, ``DIHERA_SERVER_CA_FILE`` (read here; a file that
    is not there gives no CA: the chart mounts it optionally), ``DIHERA_CLUSTER_DOMAIN``, ``DIHERA_PEER_WAIT_IMAGE``,
    ``DIHERA_PEER_WAIT_IMAGE_PULL_POLICY``, ``DIHERA_PEER_WAIT_TIMEOUT`` (the replicas' peer wait),
    ``DIHERA_WATCH_NAMESPACES`` (comma-separated; empty: all), ``DIHERA_LEASE_NAME`` (empty: standalone),
    ``DIHERA_LEASE_DURATION``, ``DIHERA_LEASE_RENEW_DEADLINE``, ``DIHERA_LEASE_RETRY_PERIOD`` (seconds),
    ``DIHERA_POD_NAMESPACE`` (where the Lease is), ``DIHERA_CONTROLLER_METRICS_PORT``,
    ``DIHERA_CONTROLLER_HEALTH_PORT``, ``DIHERA_BIND_ADDRESS``, ``DIHERA_POD_NAME`` (the replica's identity in
    the Lease), ``DIHERA_KUEUE`` (``true``: queue with Kueue),
    ``DIHERA_KUEUE_PRIORITY_CLASSES``, ``DIHERA_KUEUE_NONPREEMPTIBLE_CLASS``, ``DIHERA_KUEUE_SCALE_WAIT``.
    """
    from dihera.controller.settings import ControllerSettings

    render = _render_settings(args, environ)
    namespaces, all_namespaces = _namespaces(args, environ)
    return ControllerSettings(
        kubeconfig=args.kubeconfig,
        context=args.context,
        namespaces=namespaces,
        all_namespaces=all_namespaces,
        render=render,
        leader_election=None if args.standalone else leader_election(args, environ, namespaces),
        identity=args.identity or _env(environ, "DIHERA_POD_NAME"),
        bind_address=args.bind_address or _env(environ, "DIHERA_BIND_ADDRESS") or "127.0.0.1",
        metrics_port=_port(args.metrics_port, _env(environ, "DIHERA_CONTROLLER_METRICS_PORT"), 8080),
        health_port=_port(args.health_port, _env(environ, "DIHERA_CONTROLLER_HEALTH_PORT"), 8081),
        workers=args.workers,
        pod_batch_seconds=args.pod_batch_seconds,
        progress_batch_seconds=args.progress_batch_seconds,
        kueue=kueue_settings(args, environ),
    )


def _env(environ: Mapping[str, str], name: str) -> str | None:
    """A chart variable's value; None when unset or empty."""
    return environ.get(name) or None


def _render_settings(args: argparse.Namespace, environ: Mapping[str, str]) -> RenderSettings:
    """How the controller renders Workflows: the di-server's URL, the cluster domain, the peer wait."""
    from dihera.peers import parse_timeout
    from dihera.render.settings import RenderSettings

    given: dict[str, Any] = {
        "server_url": args.server_url or _env(environ, "DIHERA_SERVER_URL"),
        "server_ca": _server_ca(args.server_ca_file, _env(environ, "DIHERA_SERVER_CA_FILE")),
        "cluster_domain": args.cluster_domain or _env(environ, "DIHERA_CLUSTER_DOMAIN"),
        "peer_wait_image": args.peer_wait_image or _env(environ, "DIHERA_PEER_WAIT_IMAGE"),
        "peer_wait_image_pull_policy": _env(environ, "DIHERA_PEER_WAIT_IMAGE_PULL_POLICY"),
    }
    timeout = (
        args.peer_wait_timeout if args.peer_wait_timeout is not None else _env(environ, "DIHERA_PEER_WAIT_TIMEOUT")
    )
    if timeout is not None:
        given["peer_wait_timeout"] = parse_timeout(str(timeout))
    return RenderSettings(**{k: v for k, v in given.items() if v is not None})


def _server_ca(flag: str | None, variable: str | None) -> str | None:
    """The di-server's CA certificates: the flag's file (it must exist), else ``DIHERA_SERVER_CA_FILE``'s if it
    exists (the chart mounts its Secret's ``ca.crt`` optionally: a certificate from a public CA has none)."""
    from pathlib import Path

    if flag:
        try:
            return Path(flag).read_text()
        except OSError as err:
            raise ValueError(f"--server-ca-file: {flag!r} cannot be read ({err.strerror})") from err
    if variable and Path(variable).is_file():
        return Path(variable).read_text() or None
    return None


def _namespaces(args: argparse.Namespace, environ: Mapping[str, str]) -> tuple[tuple[str, ...], bool]:
    """The namespaces watched, and whether all are: the flags, else ``DIHERA_WATCH_NAMESPACES`` (empty: all)."""
    namespaces = tuple(args.namespace or ())
    all_namespaces = bool(args.all_namespaces)
    if not namespaces and not all_namespaces:
        watched = [n.strip() for n in (environ.get("DIHERA_WATCH_NAMESPACES") or "").split(",") if n.strip()]
        namespaces, all_namespaces = tuple(watched), not watched
    return namespaces, all_namespaces


def leader_election(
    args: argparse.Namespace, environ: Mapping[str, str], namespaces: tuple[str, ...]
) -> LeaderElection | None:
    """The Lease the replicas share (:class:`~dihera.controller.settings.LeaderElection`), or None when
    ``DIHERA_LEASE_NAME`` is set empty (standalone). Its namespace: the flag, else the pod's own
    (``DIHERA_POD_NAMESPACE``), else the one namespace watched, else ``default``."""
    from dihera.controller.settings import LeaderElection

    name = args.leader_elect_resource_name or environ.get("DIHERA_LEASE_NAME", "dihera-controller")
    if not name:
        return None
    namespace = args.leader_elect_resource_namespace or environ.get("DIHERA_POD_NAMESPACE")
    if not namespace and len(namespaces) == 1 and not any(c in namespaces[0] for c in "*?[!"):
        namespace = namespaces[0]
    return LeaderElection(
        namespace=namespace or "default",
        name=name,
        lease_seconds=_seconds(args.leader_elect_lease_duration, environ.get("DIHERA_LEASE_DURATION"), 15),
        renew_seconds=_seconds(args.leader_elect_renew_deadline, environ.get("DIHERA_LEASE_RENEW_DEADLINE"), 10),
        retry_seconds=_seconds(args.leader_elect_retry_period, environ.get("DIHERA_LEASE_RETRY_PERIOD"), 2),
    )


def kueue_settings(args: argparse.Namespace, environ: Mapping[str, str]) -> KueueSettings | None:
    """The Kueue settings (``--kueue`` or ``DIHERA_KUEUE=true``), else None."""
    from dihera.queueing import NONPREEMPTIBLE_CLASS, KueueSettings
    from dihera.queueing.settings import parse_priority_classes

    on = bool(getattr(args, "kueue", False)) or (environ.get("DIHERA_KUEUE") or "").lower() in ("1", "true", "yes")
    if not on:
        return None
    classes = getattr(args, "kueue_priority_classes", None) or environ.get("DIHERA_KUEUE_PRIORITY_CLASSES") or ""
    wait = getattr(args, "kueue_scale_wait", None) or environ.get("DIHERA_KUEUE_SCALE_WAIT") or 15.0
    return KueueSettings(
        priority_classes=parse_priority_classes(classes),
        nonpreemptible_class=getattr(args, "kueue_nonpreemptible_class", None)
        or environ.get("DIHERA_KUEUE_NONPREEMPTIBLE_CLASS")
        or NONPREEMPTIBLE_CLASS,
        scale_wait=float(wait),
    )


def add_kueue_flags(p: argparse.ArgumentParser) -> None:
    """The Kueue flags, shared by ``dihera controller`` and ``dihera server`` (docs/queueing.md)."""
    p.add_argument(
        "--kueue",
        action="store_true",
        help="queue DIJobs labelled kueue.x-k8s.io/queue-name with Kueue (default: $DIHERA_KUEUE)",
    )
    p.add_argument(
        "--kueue-priority-classes",
        metavar="P=CLASS,...",
        help="spec.priority -> WorkloadPriorityClass of preemptible jobs "
        "(default low=dihera-low,normal=dihera-normal,high=dihera-high)",
    )
    p.add_argument(
        "--kueue-nonpreemptible-class",
        metavar="CLASS",
        help="WorkloadPriorityClass of every preemptible: false job (default dihera-nonpreemptible)",
    )
    p.add_argument(
        "--kueue-scale-wait",
        type=float,
        metavar="SECONDS",
        help="how long a scale-up waits for Kueue to admit the added replicas before it is refused (default 15)",
    )


def add_leader_election_flags(p: argparse.ArgumentParser) -> None:
    """Leader election on a Lease, with kube-controller-manager's flag names."""
    p.add_argument("--standalone", action="store_true", help="no leader election (one instance; tests)")
    p.add_argument(
        "--leader-elect-resource-name",
        metavar="NAME",
        help="the Lease the replicas share (default: $DIHERA_LEASE_NAME, else dihera-controller)",
    )
    p.add_argument(
        "--leader-elect-resource-namespace",
        metavar="NS",
        help="the Lease's namespace (default: $DIHERA_POD_NAMESPACE, else the one namespace watched, else default)",
    )
    p.add_argument(
        "--leader-elect-lease-duration",
        type=int,
        metavar="SECONDS",
        help="a replica takes the Lease this long after its holder's last renewal "
        "(default: $DIHERA_LEASE_DURATION, else 15)",
    )
    p.add_argument(
        "--leader-elect-renew-deadline",
        type=int,
        metavar="SECONDS",
        help="the holder stops leading if it could not renew the Lease this long "
        "(default: $DIHERA_LEASE_RENEW_DEADLINE, else 10)",
    )
    p.add_argument(
        "--leader-elect-retry-period",
        type=int,
        metavar="SECONDS",
        help="how often the holder renews and the others try to take the Lease "
        "(default: $DIHERA_LEASE_RETRY_PERIOD, else 2)",
    )
    p.add_argument("--identity", help="this replica's name in the Lease (default: $DIHERA_POD_NAME, else <host>_<pid>)")


def _seconds(flag: int | None, env: str | None, default: int) -> int:
    """A whole number of seconds: the flag, else the chart's variable, else the default."""
    if flag is not None:
        return flag
    try:
        return int(env) if env else default
    except ValueError:
        raise ValueError(f"{env!r} is not a whole number of seconds") from None


def _port(flag: int | None, env: str | None, default: int) -> int:
    if flag is not None:
        return flag
    return int(env) if env else default


def _cmd_controller(args: argparse.Namespace) -> int:
    from dihera.cli.service import run_service
    from dihera.controller.run import run_controller

    return run_service("controller", args, settings_from_args, run_controller)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``controller`` to the ``dihera`` command."""
    from dihera.cli.peers import add_peer_wait_flags

    p = sub.add_parser("controller", help="run the DIJob status-sync controller")
    p.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config, else in-cluster)")
    p.add_argument("--context", help="kubeconfig context")
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "-n",
        "--namespace",
        action="append",
        help="namespace or pattern ('team-*', '!kube-*'); repeatable (default: $DIHERA_WATCH_NAMESPACES)",
    )
    where.add_argument("-A", "--all-namespaces", action="store_true", help="watch DIJobs in every namespace")
    p.add_argument("--server-url", help="di-server URL given to pods as DI_SERVER_URL")
    p.add_argument(
        "--server-ca-file",
        help="the di-server's CA certificates (PEM), given to pods as DI_SERVER_CA (default $DIHERA_SERVER_CA_FILE)",
    )
    p.add_argument("--cluster-domain", help="cluster DNS domain (default cluster.local)")
    add_peer_wait_flags(p)
    add_leader_election_flags(p)
    p.add_argument("--bind-address", help="address of the HTTP endpoints (default 127.0.0.1; 0.0.0.0 in a pod)")
    p.add_argument("--metrics-port", type=int, help="/metrics and /readyz (default 8080; 0: off)")
    p.add_argument("--health-port", type=int, help="liveness /healthz (default 8081; 0: off)")
    p.add_argument("--workers", type=int, default=16, help="threads reconciling jobs")
    p.add_argument(
        "--pod-batch-seconds",
        type=float,
        default=0.5,
        metavar="SECONDS",
        help="seconds a pod's event waits before its job's pass: a burst, one status write (default 0.5; 0: none)",
    )
    p.add_argument(
        "--progress-batch-seconds",
        type=float,
        default=1.0,
        metavar="SECONDS",
        help="a job's status writes that only report progress (pod counts) are at least this far apart; "
        "phase changes are written at once (default 1.0; 0: every change at once)",
    )
    add_kueue_flags(p)
    p.set_defaults(func=_cmd_controller)
