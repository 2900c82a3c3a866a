"""``dihera validate``, ``dihera render`` and ``dihera crd``: files in, findings or objects out.

``-`` reads standard input. A file may hold DIJobs and the Kubernetes objects that go with them
(a ConfigMap with the DI-engine config...): DIJobs are validated and rendered, the others are
checked to be Kubernetes objects and passed through untouched, first. ``validate`` imports neither
Hera nor the Kubernetes client; ``render`` imports Hera's models only.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from dihera.documents import Document, Manifests

__all__ = ["read_manifests", "read_text", "register"]

_UTF16_MARKS = (b"\xff\xfe", b"\xfe\xff")


def _not_utf8(label: str, data: bytes, err: UnicodeDecodeError) -> str:
    byte, line = data[err.start], data.count(b"\n", 0, err.start) + 1
    hint = " (it starts with UTF-16's byte-order mark)" if data.startswith(_UTF16_MARKS) else ""
    return f"{label}: not UTF-8 text (byte 0x{byte:02x} at offset {err.start}, line {line}){hint}; save it as UTF-8"


def read_text(name: str, stdin: TextIO | None = None) -> str:
    """The UTF-8 text of a file (``-``: standard input, read as bytes when it has them).

    Raises ValueError naming the file (``<stdin>``) when it cannot be read or is not UTF-8 text, with
    the first bad byte, its offset and line.
    """
    label = "<stdin>" if name == "-" else name
    try:
        if name == "-":
            stream = stdin or sys.stdin
            buffer = getattr(stream, "buffer", None)
            data: bytes | str = buffer.read() if buffer is not None else stream.read()
        else:
            data = Path(name).read_bytes()
    except OSError as err:
        raise ValueError(f"{label}: cannot read: {err.strerror}") from err
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(_not_utf8(label, data, err)) from None


def read_manifests(name: str, stdin: TextIO | None = None) -> Manifests:
    """The DIJobs and other objects of a file (``-``: standard input).

    Raises ValueError naming the file when it cannot be read or is not UTF-8 (:func:`read_text`), and
    :class:`~dihera.errors.InvalidJobError` listing every problem of its YAML and documents.
    """
    from dihera.documents import load_documents, split_manifests

    source = "<stdin>" if name == "-" else name
    return split_manifests(load_documents(read_text(name, stdin), source), source)


def job_label(name: str, doc: Document, many: bool) -> str:
    """``file.yaml[2] (name)``: where a DIJob's problems come from."""
    label = "<stdin>" if name == "-" else name
    if many:
        label += f"[{doc.position}]"
    meta = doc.body.get("metadata") if isinstance(doc.body, dict) else None
    if isinstance(meta, dict) and meta.get("name"):
        label += f" ({meta['name']})"
    return label


def _validate_file(name: str, quiet: bool) -> bool:
    from dihera.errors import InvalidJobError
    from dihera.validation import validate

    try:
        manifests = read_manifests(name)
    except ValueError as err:
        if not isinstance(err, InvalidJobError):
            print(err, file=sys.stderr)
            return False
        for p in err.problems:
            print(f"{err.source}: {p}")
        return False
    ok = True
    many = len(manifests.jobs) + len(manifests.others) > 1
    for doc in manifests.jobs:
        label = job_label(name, doc, many)
        problems = validate(doc.body)
        for p in problems:
            print(f"{label}: {p}")
        ok = ok and not problems
        if not problems and not quiet:
            print(f"{label}: valid", file=sys.stderr)
    return ok


def _cmd_validate(args: argparse.Namespace) -> int:
    results = [_validate_file(name, args.quiet) for name in args.files]
    return 0 if all(results) else 1


def _with_namespace(body: dict[str, Any], namespace: str | None) -> dict[str, Any]:
    if not namespace:
        return body
    return {**body, "metadata": {**(body.get("metadata") or {}), "namespace": namespace}}


def _cmd_render(args: argparse.Namespace) -> int:
    from dihera.errors import InvalidJobError
    from dihera.manifests import dump_yaml_stream
    from dihera.render import RenderSettings, render
    from dihera.validation import load_job

    given = {
        "server_url": args.server_url,
        "cluster_domain": args.cluster_domain,
        "peer_wait_image": args.peer_wait_image,
        "peer_wait_timeout": args.peer_wait_timeout,
    }
    try:
        settings = RenderSettings(**{k: v for k, v in given.items() if v not in (None, "")})
        manifests = read_manifests(args.file)
        many = len(manifests.jobs) + len(manifests.others) > 1
        objects: list[Mapping[str, object]] = [d.body for d in manifests.others]
        for doc in manifests.jobs:
            job = load_job(_with_namespace(doc.body, args.namespace), source=job_label(args.file, doc, many))
            objects += render(job, settings).objects()
    except (ValueError, InvalidJobError) as err:
        print(err, file=sys.stderr)
        return 1
    sys.stdout.write(dump_yaml_stream(objects))
    return 0


def _cmd_crd(args: argparse.Namespace) -> int:
    del args
    from dihera.manifests import dump_yaml
    from dihera.schema import crd_manifest, dijob_schema

    sys.stdout.write(dump_yaml(crd_manifest(dijob_schema())))
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``validate``, ``render`` and ``crd`` to the ``dihera`` command."""
    from dihera.cli.peers import add_peer_wait_flags

    p = sub.add_parser("validate", help="check DIJob files (and their companion objects); one line per problem")
    p.add_argument("files", nargs="+", metavar="FILE", help="YAML files ('-' for stdin)")
    p.add_argument("-q", "--quiet", action="store_true", help="print only problems")
    p.set_defaults(func=_cmd_validate)
    p = sub.add_parser("render", help="render DIJobs into Kubernetes objects (YAML stream; other objects first)")
    p.add_argument("file", metavar="FILE", help="YAML file ('-' for stdin)")
    p.add_argument("-n", "--namespace", help="namespace of the DIJobs (overrides metadata.namespace)")
    p.add_argument("--server-url", help="the di-server URL given to pods as DI_SERVER_URL")
    p.add_argument("--cluster-domain", help="cluster DNS domain (default cluster.local)")
    add_peer_wait_flags(p)
    p.set_defaults(func=_cmd_render)
    p = sub.add_parser("crd", help="print the DIJob CustomResourceDefinition")
    p.set_defaults(func=_cmd_crd)
