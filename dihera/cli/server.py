"""``dihera server``: run the di-server, the HTTP API to read and scale jobs (needs the operator extras).

dihera server (--tls-cert-file F --tls-key-file F | --plain-http) [--host H] [--port P] [--kubeconfig F]
              [-n NS[,NS...]] [--log-level L] [--no-auth] [--anonymous-views]

HTTPS with the given certificate; plain HTTP only when asked (``--plain-http``): every caller sends a
bearer token.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dihera.server.settings import ServerSettings

__all__ = ["register", "settings_from_args"]


def settings_from_args(args: argparse.Namespace, environ: Mapping[str, str]) -> ServerSettings:
    """The one settings object: flags first, then the chart's ``DIHERA_*`` variables, then defaults.

    Read at the entry point only: ``DIHERA_WATCH_NAMESPACES`` (comma-separated; empty: all),
    ``DIHERA_LOG_LEVEL``, ``DIHERA_BIND_ADDRESS``, ``DIHERA_SERVER_PORT``, ``DIHERA_CLUSTER_DOMAIN``,
    ``DIHERA_TLS_CERT_FILE``, ``DIHERA_TLS_KEY_FILE``, ``DIHERA_PLAIN_HTTP`` (``true``), and Kueue's
    (``DIHERA_KUEUE``...: :func:`dihera.cli.controller.kueue_settings`).
    Raises ValueError naming every bad variable or flag and its value.
    """

    from dihera.cli.controller import kueue_settings
    from dihera.server.settings import ServerSettings

    problems: list[str] = []
    port = _port(args.port, environ, problems)
    namespaces = _namespaces(args.namespace, environ)
    level = (args.log_level or _env(environ, "DIHERA_LOG_LEVEL") or "info").lower()
    cert, key = _tls_files(args, environ, problems)
    try:
        settings = ServerSettings(
            host=args.host or _env(environ, "DIHERA_BIND_ADDRESS") or "127.0.0.1",
            port=8081 if port is None else port,
            kubeconfig=args.kubeconfig,
            auth=not args.no_auth,
            namespaces=namespaces,
            cluster_domain=args.cluster_domain or _env(environ, "DIHERA_CLUSTER_DOMAIN") or "cluster.local",
            log_level=level,
            anonymous_views=bool(getattr(args, "anonymous_views", False)),
            kueue=kueue_settings(args, environ),
            tls_cert_file=cert,
            tls_key_file=key,
        )
    except ValueError as err:
        problems.append(str(err))
    else:
        if not problems:
            return settings
    raise ValueError("; ".join(problems))


def _env(environ: Mapping[str, str], name: str) -> str | None:
    """A chart variable's value, stripped; None when unset or blank."""
    return (environ.get(name) or "").strip() or None


def _tls_files(
    args: argparse.Namespace, environ: Mapping[str, str], problems: list[str]
) -> tuple[str | None, str | None]:
    """The certificate and key files (flags, else ``DIHERA_TLS_*``); a problem when there are none and plain
    HTTP was not asked for, or when both were."""
    cert = getattr(args, "tls_cert_file", None) or _env(environ, "DIHERA_TLS_CERT_FILE")
    key = getattr(args, "tls_key_file", None) or _env(environ, "DIHERA_TLS_KEY_FILE")
    flag = (_env(environ, "DIHERA_PLAIN_HTTP") or "false").lower()
    if flag not in ("true", "false"):
        problems.append(f"DIHERA_PLAIN_HTTP: {flag!r} is not true or false")
    plain = bool(getattr(args, "plain_http", False)) or flag == "true"
    if plain and (cert or key):
        problems.append("--plain-http: given with a TLS certificate (--tls-cert-file/--tls-key-file); choose one")
    elif not plain and not cert and not key:
        problems.append(
            "--tls-cert-file: no certificate (nor $DIHERA_TLS_CERT_FILE): give it and --tls-key-file to serve "
            "HTTPS, or --plain-http to serve plain HTTP (bearer tokens in clear text)"
        )
    return cert, key


def _namespaces(flag: str | None, environ: Mapping[str, str]) -> tuple[str, ...]:
    """The namespaces served: the flag, else ``DIHERA_WATCH_NAMESPACES`` (comma-separated; empty: all)."""
    listed = flag or environ.get("DIHERA_WATCH_NAMESPACES") or ""
    return tuple(n.strip() for n in listed.split(",") if n.strip())


def _port(flag: int | None, environ: Mapping[str, str], problems: list[str]) -> int | None:
    """The port: the flag, else ``DIHERA_SERVER_PORT`` (a problem when it is not a number), else None."""
    if flag is not None:
        return flag
    text = _env(environ, "DIHERA_SERVER_PORT")
    if not text:
        return None
    if not text.isdigit():
        problems.append(f"DIHERA_SERVER_PORT: {text!r} is not a port number")
        return None
    return int(text)


def _cmd_server(args: argparse.Namespace) -> int:
    from dihera.cli.service import run_service
    from dihera.server.run import serve

    def run(settings: ServerSettings) -> int:
        serve(settings)
        return 0

    return run_service("server", args, settings_from_args, run)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``server`` to the ``dihera`` command."""
    from dihera.cli.controller import add_kueue_flags

    p = sub.add_parser("server", help="run the di-server (HTTP API to read and scale jobs)")
    p.add_argument("--host", help="address to listen on (default $DIHERA_BIND_ADDRESS, else 127.0.0.1)")
    p.add_argument("--port", type=int, help="port (default $DIHERA_SERVER_PORT, else 8081)")
    p.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config, in-cluster)")
    p.add_argument(
        "-n",
        "--namespace",
        metavar="NS[,NS...]",
        help="serve only these namespaces, comma-separated (default $DIHERA_WATCH_NAMESPACES; empty: all)",
    )
    p.add_argument("--cluster-domain", help="cluster DNS domain (default $DIHERA_CLUSTER_DOMAIN, else cluster.local)")
    p.add_argument("--log-level", help="debug, info, warning or error (default $DIHERA_LOG_LEVEL, else info)")
    p.add_argument("--tls-cert-file", help="serve HTTPS with this certificate, PEM (default $DIHERA_TLS_CERT_FILE)")
    p.add_argument("--tls-key-file", help="the certificate's private key, PEM (default $DIHERA_TLS_KEY_FILE)")
    p.add_argument(
        "--plain-http",
        action="store_true",
        help="serve plain HTTP, without a certificate (or $DIHERA_PLAIN_HTTP=true): tokens cross the network in clear",
    )
    p.add_argument(
        "--no-auth",
        action="store_true",
        help="accept every caller (local demo only: refused unless --host is 127.0.0.1, ::1 or localhost)",
    )
    p.add_argument(
        "--anonymous-views",
        action="store_true",
        help="serve the read-only /ui views (the Argo UI's links) without a token; API reads and writes still need one",
    )
    add_kueue_flags(p)
    p.set_defaults(func=_cmd_server)
