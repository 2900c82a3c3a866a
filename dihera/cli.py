"""The ``dihera`` command: validate and render DIJobs; further commands register themselves.

    dihera validate FILE...            exit 0 if every job is valid, else 1 and one line per problem
    dihera render FILE [--namespace NS] [--server-url URL]   all objects as one YAML stream
    dihera crd                          the DIJob CustomResourceDefinition

``-`` reads standard input.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import yaml

from dihera.errors import InvalidJobError, Problem
from dihera.manifests import dump_yaml, dump_yaml_stream
from dihera.render import RenderSettings, render
from dihera.schema import crd_manifest, dijob_schema
from dihera.validation import load_job, validate

__all__ = ["main", "read_documents"]

#: Modules that add subcommands through ``register(subparsers)``.
COMMAND_MODULES: tuple[str, ...] = ("dihera.controller.cli", "dihera.server.cli")


def read_documents(name: str, stdin: TextIO | None = None) -> list[Any]:
    """Every YAML document of a file (``-``: standard input). Raises ValueError naming the file."""
    try:
        text = (stdin or sys.stdin).read() if name == "-" else Path(name).read_text(encoding="utf-8")
    except OSError as err:
        raise ValueError(f"{name}: cannot read: {err.strerror}") from err
    try:
        return [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as err:
        raise ValueError(f"{name}: not valid YAML: {err}") from err


def _label(name: str, doc: Any, i: int, many: bool) -> str:
    label = "<stdin>" if name == "-" else name
    if many:
        label += f"[{i}]"
    if isinstance(doc, dict) and isinstance(doc.get("metadata"), dict) and doc["metadata"].get("name"):
        label += f" ({doc['metadata']['name']})"
    return label


def _cmd_validate(args: argparse.Namespace) -> int:
    bad = False
    for name in args.files:
        try:
            docs = read_documents(name)
        except ValueError as err:
            print(err, file=sys.stderr)
            bad = True
            continue
        if not docs:
            print(f"{name}: no DIJob in file", file=sys.stderr)
            bad = True
        for i, doc in enumerate(docs):
            label = _label(name, doc, i, len(docs) > 1)
            problems: list[Problem] = validate(doc)
            for p in problems:
                print(f"{label}: {p}")
            bad = bad or bool(problems)
            if not problems and not args.quiet:
                print(f"{label}: valid", file=sys.stderr)
    return 1 if bad else 0


def _cmd_render(args: argparse.Namespace) -> int:
    settings = RenderSettings(
        **({"server_url": args.server_url} if args.server_url else {}),
        **({"cluster_domain": args.cluster_domain} if args.cluster_domain else {}),
    )
    try:
        docs = read_documents(args.file)
        objects = []
        for i, doc in enumerate(docs):
            if args.namespace and isinstance(doc, dict):
                doc = {**doc, "metadata": {**(doc.get("metadata") or {}), "namespace": args.namespace}}
            job = load_job(doc, source=_label(args.file, doc, i, len(docs) > 1))
            objects += render(job, settings).objects()
    except (ValueError, InvalidJobError) as err:
        print(err, file=sys.stderr)
        return 1
    sys.stdout.write(dump_yaml_stream(objects))
    return 0


def _cmd_crd(args: argparse.Namespace) -> int:
    del args
    sys.stdout.write(dump_yaml(crd_manifest(dijob_schema())))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dihera", description="DI-engine jobs on Argo Workflows.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {importlib.metadata.version('dihera')}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    p = sub.add_parser("validate", help="check DIJob files; one line per problem")
    p.add_argument("files", nargs="+", metavar="FILE", help="YAML files ('-' for stdin)")
    p.add_argument("-q", "--quiet", action="store_true", help="print only problems")
    p.set_defaults(func=_cmd_validate)
    p = sub.add_parser("render", help="render a DIJob into Kubernetes objects (YAML stream)")
    p.add_argument("file", metavar="FILE", help="YAML file ('-' for stdin)")
    p.add_argument("-n", "--namespace", help="namespace of the job (overrides metadata.namespace)")
    p.add_argument("--server-url", help="the di-server URL given to pods as DI_SERVER_URL")
    p.add_argument("--cluster-domain", help="cluster DNS domain (default cluster.local)")
    p.set_defaults(func=_cmd_render)
    p = sub.add_parser("crd", help="print the DIJob CustomResourceDefinition")
    p.set_defaults(func=_cmd_crd)
    for module in COMMAND_MODULES:
        importlib.import_module(module).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
