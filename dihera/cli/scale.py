"""``dihera scale`` and ``dihera status``: change or show a running DIJob's replicas.

    dihera scale NS/NAME --task collector --replicas N      (or --add N, --remove N, --remove-replica NAME...)
    dihera status NS/NAME [--watch]

``scale`` talks to the Kubernetes API directly with the same code the server runs, or to a
di-server with ``--server URL`` (and ``--token``, or ``$DIHERA_TOKEN``; its HTTPS certificate checked against
``--ca-file``, or ``$DIHERA_CA_FILE``, else the system's certificates; read here, at the entry point),
sending its request with an Idempotency-Key and again with the same key while no final answer comes
(dihera.cli.server_calls).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import httpx

    from dihera.kube.jobs import JobStore
    from dihera.kube.objects import ObjectStore
    from dihera.kube.snapshot import JobSnapshot
    from dihera.scaling import ScaleRequest

__all__ = ["register"]


def _job_id(text: str) -> tuple[str, str]:
    namespace, slash, name = text.partition("/")
    if not slash or not namespace or not name:
        raise argparse.ArgumentTypeError(f"{text!r}: expected NAMESPACE/NAME")
    return namespace, name


def _request(args: argparse.Namespace) -> ScaleRequest:
    from dihera.scaling import ScaleError, ScaleRequest

    if args.remove_replica:
        return ScaleRequest.remove_named(args.remove_replica)
    if not args.task:
        raise ScaleError("--task is required with --replicas, --add or --remove")
    if args.replicas is not None:
        return ScaleRequest.set_replicas(args.task, args.replicas)
    if args.add is not None:
        return ScaleRequest.add(args.task, args.add)
    return ScaleRequest.remove(args.task, args.remove)


def _call_server(
    args: argparse.Namespace, request: ScaleRequest, call: Callable[..., httpx.Response]
) -> httpx.Response:
    """The request on the di-server's route for it (``call``: :func:`dihera.cli.server_calls.send`, bound)."""
    namespace, name = args.job
    server = args.server.rstrip("/")
    base = f"{server}/v1/namespaces/{namespace}/dijobs/{name}"
    if request.names:
        return call("POST", f"{base}/replicas:remove", json={"replicas": list(request.names)})
    if request.action.value == "set":
        return call("PUT", f"{base}/tasks/{request.task}/replicas", json={"replicas": request.count})
    # add / remove n: DI-orchestrator's routes
    method = "POST" if request.action.value == "add" else "DELETE"
    url = f"{server}/v2alpha1/job/{namespace}.{name}/replicas"
    return call(method, url, params={"task": request.task or ""}, json={"replicas": request.count})


def _scale_via_server(args: argparse.Namespace, request: ScaleRequest) -> int:
    import httpx

    from dihera.cli.server_calls import Retry, new_key, send, tls_context, untrusted

    token = args.token or os.environ.get("DIHERA_TOKEN")
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    key = args.idempotency_key or new_key()
    ca_file = args.ca_file or os.environ.get("DIHERA_CA_FILE") or None
    try:
        verify = tls_context(ca_file)
    except ValueError as err:
        print(err, file=sys.stderr)
        return 2
    call = functools.partial(send, key=key, headers=headers, retry=Retry(seconds=args.retry_seconds), verify=verify)
    try:
        resp = _call_server(args, request, call)
    except httpx.TransportError as err:
        bad = untrusted(err)
        if bad is not None:
            trust = f"the CA in {ca_file}" if ca_file else "the system's CAs (give the di-server's with --ca-file)"
            print(f"{args.server}: its certificate is not trusted by {trust}: {bad.verify_message}; not sent",
                  file=sys.stderr)  # fmt: skip
            return 1
        lost = f"no answer from {args.server} in {args.retry_seconds:g}s ({type(err).__name__}: {err})"
        print(f"{lost}; it may have been applied: send it again with --idempotency-key {key}", file=sys.stderr)
        return 1
    answer = resp.json() if resp.headers.get("content-type", "").startswith("application/json") else {}
    if resp.status_code != 200:
        print(f"{resp.status_code}: {answer.get('detail') or answer.get('message') or resp.text}", file=sys.stderr)
        return 1
    print(json.dumps(answer.get("data", answer), indent=2))
    return 0


def _cmd_scale(args: argparse.Namespace) -> int:
    from dihera.kube import api_client
    from dihera.kube.scale_executor import JobScaler
    from dihera.render.settings import RenderSettings
    from dihera.scaling import ScaleError
    from dihera.server import views

    try:
        request = _request(args)
        if args.server:
            return _scale_via_server(args, request)
        settings = RenderSettings(cluster_domain=args.cluster_domain)
        namespace, name = args.job
        result = JobScaler(api_client(args.kubeconfig), settings).scale(namespace, name, request)
    except ScaleError as err:
        print(err, file=sys.stderr)
        return 1
    out = views.scale_out(result, args.cluster_domain)
    print(json.dumps(out.model_dump(), indent=2))
    return 0


def _snapshot(jobs: JobStore, objects: ObjectStore, namespace: str, name: str) -> JobSnapshot | None:
    from dihera.constants import LABEL_JOB
    from dihera.kube.snapshot import JobSnapshot
    from dihera.naming import membership_configmap_name
    from dihera.shapes.configmap import as_configmap
    from dihera.shapes.pod import as_pod

    body = jobs.get(namespace, name)
    if body is None:
        return None
    configmap = objects.get_configmap(namespace, membership_configmap_name(name))
    pods = objects.list_pods(namespace, f"{LABEL_JOB}={name}")
    return JobSnapshot(body, None if configmap is None else as_configmap(configmap), tuple(as_pod(p) for p in pods))


def _render_status(job: JobSnapshot, domain: str) -> str:
    from dihera.server import views

    s = views.summary(job)
    lines = [
        f"DIJob {s.namespace}/{s.name}: phase {s.phase or '-'}, {s.replicas} replicas, "
        f"membership generation {s.membershipGeneration if s.membershipGeneration is not None else '-'}",
        "  tasks: " + ", ".join(f"{t.name}={t.replicas}" for t in s.tasks),
        f"  {'RANK':>4}  {'REPLICA':<20} {'PHASE':<10} FQDN",
    ]
    for r in views.replica_rows(job, domain):
        lines.append(f"  {r.rank:>4}  {r.name:<20} {r.phase or '-':<10} {r.fqdn}")
    return "\n".join(lines)


def _cmd_status(args: argparse.Namespace) -> int:
    from dihera.kube import api_client
    from dihera.kube.jobs import JobStore
    from dihera.kube.objects import ObjectStore

    api = api_client(args.kubeconfig)
    jobs, objects = JobStore(api), ObjectStore(api)
    last = ""
    while True:
        job = _snapshot(jobs, objects, *args.job)
        text = _render_status(job, args.cluster_domain) if job else f"DIJob {'/'.join(args.job)} not found"
        if text != last:
            print(text + ("\n" if args.watch else ""), flush=True)
            last = text
        if not args.watch:
            return 0 if job else 1
        try:
            time.sleep(args.interval)
        except KeyboardInterrupt:
            return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``scale`` and ``status`` to the ``dihera`` command."""
    p = sub.add_parser("scale", help="change the replicas of a running DIJob")
    p.add_argument("job", type=_job_id, metavar="NAMESPACE/NAME")
    p.add_argument("--task", help="task to scale")
    how = p.add_mutually_exclusive_group(required=True)
    how.add_argument("--replicas", type=int, help="set the task's replicas to N")
    how.add_argument("--add", type=int, help="add N replicas")
    how.add_argument("--remove", type=int, help="remove N replicas (the highest-ranked)")
    how.add_argument("--remove-replica", nargs="+", metavar="NAME", help="remove these replicas (<task>-<index>)")
    p.add_argument("--server", help="di-server URL; default: the Kubernetes API directly")
    p.add_argument("--token", help="bearer token for --server (default $DIHERA_TOKEN)")
    p.add_argument(
        "--ca-file",
        help="with an https --server: the CA certificates (PEM) its certificate is checked against (default "
        "$DIHERA_CA_FILE, else the system's); the chart publishes them in ConfigMap <release>-server-ca",
    )
    p.add_argument(
        "--idempotency-key",
        help="with --server: the request's key (default: a new one); the same key is applied once, "
        "so a request sent again with it cannot scale twice",
    )
    p.add_argument(
        "--retry-seconds",
        type=float,
        default=60.0,
        help="with --server: keep sending the request (same key) this long while no final answer comes "
        "(connection refused or lost, 502/503/504/429)",
    )
    p.add_argument("--kubeconfig", help="kubeconfig file")
    p.add_argument("--cluster-domain", default="cluster.local", help="cluster DNS domain")
    p.set_defaults(func=_cmd_scale)

    p = sub.add_parser("status", help="a DIJob's phase, replicas and membership")
    p.add_argument("job", type=_job_id, metavar="NAMESPACE/NAME")
    p.add_argument("-w", "--watch", action="store_true", help="keep printing on every change (Ctrl-C stops)")
    p.add_argument("--interval", type=float, default=2.0, help="seconds between reads with --watch")
    p.add_argument("--kubeconfig", help="kubeconfig file")
    p.add_argument("--cluster-domain", default="cluster.local", help="cluster DNS domain")
    p.set_defaults(func=_cmd_status)
