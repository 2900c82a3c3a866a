"""``dihera outputs NAMESPACE/JOB``: the artifacts a DIJob's replicas stored (docs/artifacts.md).

Lists ``status.artifacts`` (what the controller read from the job's Workflow) and, with ``--download DIR``,
fetches each through argo server, as the Argo UI does (``/artifacts/<namespace>/<workflow>/<node>/<name>``:
argo server reads the cluster's artifact repository with its own credentials). An archive (Argo's default
for a file or a directory, ``.tgz``) is unpacked into ``DIR/<replica>/<name>/``; anything else is written as
``DIR/<replica>/<file>``. argo server's address comes from ``--argo-server`` or ``$ARGO_SERVER`` (as for
Argo's CLI; ``host:port`` means HTTPS unless ``--argo-insecure`` / ``$ARGO_SECURE=false``), its token from
``--argo-token`` or ``$ARGO_TOKEN``.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tarfile
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from urllib.parse import quote

from dihera.shapes.dijob import ArtifactOutput, as_status

__all__ = ["argo_server_url", "artifact_path", "register", "save_artifact"]

EXIT_NOT_FOUND = 1
EXIT_FAILED = 2


def argo_server_url(value: str | None, insecure: bool | None = None) -> str | None:
    """argo server's base URL from ``--argo-server`` (else ``$ARGO_SERVER``): a URL as given, a bare
    ``host:port`` with https (http when ``insecure``, else when ``$ARGO_SECURE`` is ``false``)."""
    text = value or os.environ.get("ARGO_SERVER")
    if not text:
        return None
    if "://" in text:
        return text.rstrip("/")
    plain = insecure if insecure is not None else os.environ.get("ARGO_SECURE", "true").lower() == "false"
    return f"{'http' if plain else 'https'}://{text.rstrip('/')}"


def artifact_path(namespace: str, workflow: str, entry: ArtifactOutput) -> str:
    """argo server's path of one ``status.artifacts`` entry's object."""
    parts = (namespace, workflow, entry["node"], entry["name"])
    return "/artifacts/" + "/".join(quote(p, safe="") for p in parts)


def save_artifact(body: bytes, entry: ArtifactOutput, directory: Path) -> Path:
    """Write one downloaded artifact under ``directory/<replica>``: an archive unpacked into ``<name>/``
    (members outside it refused), anything else as its key's file name. Returns what was written."""
    replica = directory / entry["replica"]
    if body[:2] == b"\x1f\x8b":  # gzip: Argo's default archive (tar + gzip)
        target = replica / entry["name"]
        target.mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(body), mode="r:gz") as archive:
            archive.extractall(target, filter="data")
        return target
    replica.mkdir(parents=True, exist_ok=True)
    target = replica / (PurePosixPath(entry.get("key") or entry["name"]).name or entry["name"])
    target.write_bytes(body)
    return target


def _table(entries: Sequence[ArtifactOutput]) -> str:
    rows = [("REPLICA", "ARTIFACT", "NODE", "KEY")] + [
        (e["replica"], e["name"], e["node"], e.get("key", "")) for e in entries
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    return "\n".join(
        "  ".join(cell.ljust(widths[i]) if i < 3 else cell for i, cell in enumerate(row)).rstrip() for row in rows
    )


def _download(args: argparse.Namespace, namespace: str, workflow: str, entries: Sequence[ArtifactOutput]) -> int:
    import httpx

    base = argo_server_url(args.argo_server, args.argo_insecure or None)
    if base is None:
        print("dihera outputs: --download needs argo server's address: --argo-server or $ARGO_SERVER", file=sys.stderr)
        return EXIT_FAILED
    token = args.argo_token or os.environ.get("ARGO_TOKEN")
    headers = {"Authorization": token if token.startswith("Bearer ") else f"Bearer {token}"} if token else {}
    failed = 0
    with httpx.Client(base_url=base, headers=headers, timeout=args.timeout, verify=not args.argo_insecure) as http:
        for entry in entries:
            path = artifact_path(namespace, workflow, entry)
            try:
                resp = http.get(path)
            except httpx.HTTPError as err:
                print(f"{entry['replica']} {entry['name']}: {base}{path}: {err}", file=sys.stderr)
                failed += 1
                continue
            if resp.status_code != 200:
                print(f"{entry['replica']} {entry['name']}: {base}{path}: HTTP {resp.status_code}", file=sys.stderr)
                failed += 1
                continue
            written = save_artifact(resp.content, entry, Path(args.download))
            print(f"{entry['replica']} {entry['name']}: {len(resp.content)} bytes -> {written}")
    return EXIT_FAILED if failed else 0


def _cmd_outputs(args: argparse.Namespace) -> int:
    from dihera.kube import api_client
    from dihera.kube.jobs import JobStore

    namespace, name = args.job
    job = JobStore(api_client(args.kubeconfig)).get(namespace, name)
    if job is None:
        print(f"DIJob {namespace}/{name} not found", file=sys.stderr)
        return EXIT_NOT_FOUND
    status = as_status(job.get("status") or {})
    entries = [e for e in status.get("artifacts") or [] if isinstance(e, Mapping)]
    if args.replica:
        entries = [e for e in entries if e.get("replica") == args.replica]
    if not entries:
        asked = len((job.get("spec") or {}).get("artifacts") or [])
        why = "its spec asks for none" if not asked else f"none of its {asked} stored yet (phase {status.get('phase')})"
        print(f"DIJob {namespace}/{name}: no artifacts: {why}", file=sys.stderr)
        return EXIT_NOT_FOUND
    print(_table(entries))
    if not args.download:
        return 0
    return _download(args, namespace, str(status.get("workflowName") or name), entries)


def _job_id(text: str) -> tuple[str, str]:
    namespace, slash, name = text.partition("/")
    if not slash or not namespace or not name:
        raise argparse.ArgumentTypeError(f"{text!r}: expected NAMESPACE/NAME")
    return namespace, name


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``outputs`` to the ``dihera`` command."""
    p = sub.add_parser("outputs", help="the artifacts a DIJob's replicas stored; download them through argo server")
    p.add_argument("job", type=_job_id, metavar="NAMESPACE/NAME")
    p.add_argument("--download", metavar="DIR", help="fetch them into DIR/<replica>/ (archives unpacked)")
    p.add_argument("--replica", help="only this replica's (<task>-<index>)")
    p.add_argument("--argo-server", help="argo server's URL or host:port (default $ARGO_SERVER)")
    p.add_argument("--argo-token", help="bearer token for argo server (default $ARGO_TOKEN)")
    p.add_argument("--argo-insecure", action="store_true", help="plain HTTP for host:port, or skip TLS verification")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per download")
    p.add_argument("--kubeconfig", help="kubeconfig file")
    p.set_defaults(func=_cmd_outputs)
