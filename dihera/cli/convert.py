"""``dihera convert FILE``: older DIJobs -> today's v2alpha1 on standard output; notes on standard error.

    dihera convert old.yaml [--collectors N] [--learners N] [--aggregator AGG.yaml] > new.yaml

Exit 0 with the converted stream; 1 (and nothing on standard output) when a document cannot be
converted, each problem naming the document and the field (a version or kind it does not know too), or
the file cannot be read as ``validate`` reads it (not UTF-8, not YAML, a key given twice, aliases past
the loader's bounds: each naming the line). A job running DI-engine's old ``ding -m dist`` pipeline is
such a problem (it needs DI-orchestrator's v1alpha1 API, which dihera does not serve, and cannot train
as converted); ``--allow-v1alpha1-programs`` converts it anyway, with a warning.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["register"]


def _read(name: str) -> list[tuple[str, Any]]:
    """(label, document) for every document of a file, read as ``validate`` reads it: strict (a key given
    twice is an error naming its line) and bounded (:mod:`dihera.documents`)."""
    from dihera.cli.jobs import read_text
    from dihera.documents import load_stream
    from dihera.errors import InvalidJobError

    label = "<stdin>" if name == "-" else name
    try:
        docs = [d.body for d in load_stream(read_text(name), label)]
    except InvalidJobError as err:
        raise ValueError("\n".join(f"{label}: error: {p}" for p in err.problems)) from None
    return [(f"{label}[{i}]" if len(docs) > 1 else label, d) for i, d in enumerate(docs)]


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 (got {value})")
    return value


def _cmd_convert(args: argparse.Namespace) -> int:
    from dihera.convert import Counts, convert_documents
    from dihera.manifests import dump_yaml_stream

    try:
        documents = _read(args.file)
        aggregators = [d for name in args.aggregator for d in _read(name)]
    except ValueError as err:
        print(err, file=sys.stderr)
        return 1
    if not documents:
        print(f"{args.file}: no document to convert", file=sys.stderr)
        return 1
    result = convert_documents(
        documents, Counts(args.collectors, args.learners), aggregators, args.allow_v1alpha1_programs
    )
    for note in result.notes:
        if note.level != "info" or not args.quiet:
            print(note, file=sys.stderr)
    if result.failed:
        return 1
    sys.stdout.write(dump_yaml_stream(result.objects))
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``convert`` to the ``dihera`` command's subparsers."""
    p = sub.add_parser("convert", help="convert DI-orchestrator DIJobs (v1alpha1, 1.0) to today's v2alpha1")
    p.add_argument("file", metavar="FILE", help="YAML file ('-' for stdin)")
    p.add_argument("--collectors", type=_positive, help="replicas of the collector task (v1alpha1)")
    p.add_argument("--learners", type=_positive, help="replicas of the learner task (v1alpha1)")
    p.add_argument("--aggregator", action="append", default=[], metavar="FILE", help="a file with the AggregatorConfig")
    p.add_argument(
        "--allow-v1alpha1-programs",
        action="store_true",
        help="convert jobs running DI-engine's old `ding -m dist` pipeline (it needs DI-orchestrator's v1alpha1 "
        "API and cannot train under dihera) with a warning instead of an error",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="print warnings and errors only")
    p.set_defaults(func=_cmd_convert)
