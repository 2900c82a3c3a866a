"""The ``dihera`` command. One small module per command group; each imports what it needs inside its commands.

    dihera validate FILE...     DIJobs (and their companion objects) are valid; one line per problem
    dihera render FILE          every object to create, as one YAML stream
    dihera crd                  the DIJob CustomResourceDefinition
    dihera convert FILE         an older DI-orchestrator DIJob (v1alpha1, the 1.0 shape) as today's v2alpha1
    dihera submit FILE          create the companion objects, then the DIJobs; optionally wait
    dihera scale | status       change or show a running job's replicas
    dihera outputs              the artifacts a job's replicas stored; download them through argo server
    dihera controller | server  the operator (needs ``pip install 'dihera[operator]'``)
    dihera wait-peers           every replica's init container: wait until its peers' FQDNs resolve
    dihera argo-ui-config       the Argo UI's columns and links for DIJobs (Argo's ConfigMap or argo-helm values)
    dihera experiment VERB      a sweep defined in Python: render, submit, status; summarize (its summary step)

- ``jobs``: validate, render, crd; ``convert``; ``submit``; ``scale``: scale and status (``server_calls``:
  its calls to a di-server, sent again with their Idempotency-Key while no final answer comes); ``outputs``
- ``controller``, ``server``: the operator's two programs (``service``: what they share)
- ``peers``: wait-peers; ``argo_ui``: argo-ui-config; ``experiments``: experiment (``trial_plugin``: the
  executor plugin of a podless sweep, ``experiment trial-plugin``)

A new command group is a module with ``register(subparsers)`` named in :data:`COMMAND_MODULES` with
the commands it adds. Building the parser imports no heavy library, so ``dihera validate`` loads neither Hera nor the
Kubernetes client, and a plain ``pip install dihera`` runs every command but the operator's.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import Any

__all__ = ["COMMAND_MODULES", "OPERATOR_MODULES", "build_parser", "main"]

#: The commands each module adds through ``register(subparsers)``, in help order. A command line naming
#: one of them loads only its module (``dihera wait-peers``, every replica's init container, starts in
#: a few tens of milliseconds); anything else (``--help``, a typo) loads them all.
COMMAND_MODULES: dict[str, tuple[str, ...]] = {
    "dihera.cli.jobs": ("validate", "render", "crd"),
    "dihera.cli.convert": ("convert",),
    "dihera.cli.submit": ("submit",),
    "dihera.cli.scale": ("scale", "status"),
    "dihera.cli.outputs": ("outputs",),
    "dihera.cli.controller": ("controller",),
    "dihera.cli.server": ("server",),
    "dihera.cli.peers": ("wait-peers",),
    "dihera.cli.argo_ui": ("argo-ui-config",),
    "dihera.cli.experiments": ("experiment",),
}
#: Top-level modules of the ``operator`` extra; a command missing one says how to install it.
OPERATOR_MODULES = frozenset({"orjson", "fastapi", "uvicorn", "prometheus_client", "starlette", "uvloop", "httptools"})


class _VersionAction(argparse.Action):
    """``--version``: reads the installed package's version only when asked (importlib.metadata is slow)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        import importlib.metadata

        print(f"{parser.prog} {importlib.metadata.version('dihera')}")
        parser.exit()


def _modules_for(argv: Sequence[str] | None) -> list[str]:
    """The command modules to load: the one owning the command ``argv`` names, else every one."""
    words = list(sys.argv[1:] if argv is None else argv)
    command = next((word for word in words if not word.startswith("-")), None)
    owner = [module for module, commands in COMMAND_MODULES.items() if command in commands]
    return owner or list(COMMAND_MODULES)


def build_parser(modules: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The ``dihera`` parser with the commands of ``modules`` (default: every command)."""
    parser = argparse.ArgumentParser(prog="dihera", description="DI-engine jobs on Argo Workflows.")
    parser.add_argument("--version", action=_VersionAction, help="show the version and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMAND_MODULES if modules is None else modules:
        importlib.import_module(module).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser(_modules_for(argv)).parse_args(argv)
    try:
        code: int = args.func(args)
    except ModuleNotFoundError as err:
        if (err.name or "").partition(".")[0] not in OPERATOR_MODULES:
            raise
        print(
            f"dihera {args.command} needs the operator extras (module {err.name!r} is missing): "
            "pip install 'dihera[operator]'",
            file=sys.stderr,
        )
        return 2
    return code


if __name__ == "__main__":
    sys.exit(main())
