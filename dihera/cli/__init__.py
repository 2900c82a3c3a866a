"""The ``dihera`` command. One small module per command group; each imports what it needs inside its commands.

    dihera validate FILE...     DIJobs (and their companion objects) are valid; one line per problem
    dihera render FILE          every object to create, as one YAML stream
    dihera crd                  the DIJob CustomResourceDefinition
    dihera convert FILE         an older DI-orchestrator DIJob (v1alpha1, the 1.0 shape) as today's v2alpha1
    dihera submit FILE          create the companion objects, then the DIJobs; optionally wait
    dihera scale | status       change or show a running job's replicas
    dihera controller | server  the operator (needs ``pip install 'dihera[operator]'``)
    dihera wait-peers           every replica's init container: wait until its peers' FQDNs resolve

A new command group is a module with ``register(subparsers)`` named in :data:`COMMAND_MODULES`.
Building the parser imports no heavy library, so ``dihera validate`` loads neither Hera nor the
Kubernetes client, and a plain ``pip install dihera`` runs every command but the operator's.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

__all__ = ["COMMAND_MODULES", "OPERATOR_MODULES", "build_parser", "main"]

#: Modules that add subcommands through ``register(subparsers)``, in help order.
COMMAND_MODULES: tuple[str, ...] = (
    "dihera.cli.jobs",
    "dihera.cli.convert",
    "dihera.cli.submit",
    "dihera.cli.scale",
    "dihera.cli.controller",
    "dihera.cli.server",
    "dihera.cli.peers",
)
#: Top-level modules of the ``operator`` extra; a command missing one says how to install it.
OPERATOR_MODULES = frozenset({"kopf", "fastapi", "uvicorn", "prometheus_client", "starlette", "uvloop", "httptools"})


class _Version(argparse.Action):
    """``--version``: the installed package's version, looked up only when asked (importlib.metadata is slow)."""

    def __call__(self, parser: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        import importlib.metadata

        print(f"{parser.prog} {importlib.metadata.version('dihera')}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dihera", description="DI-engine jobs on Argo Workflows.")
    parser.add_argument("--version", action=_Version, nargs=0, help="show the version and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMAND_MODULES:
        importlib.import_module(module).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
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
