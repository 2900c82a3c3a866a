"""``dihera submit``: create a file's companion objects, then its DIJobs; optionally wait for a phase."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping

__all__ = ["register"]


def _cmd_submit(args: argparse.Namespace) -> int:
    from kubernetes.client.exceptions import ApiException
    from kubernetes.dynamic.exceptions import ResourceNotFoundError

    from dihera.cli.jobs import read_manifests
    from dihera.errors import InvalidJobError
    from dihera.kube import api_client
    from dihera.kube.apply import apply_object
    from dihera.kube.errors import describe_api_error
    from dihera.kube.jobs import JobStore, WaitTimeout
    from dihera.objects import metadata
    from dihera.submit import format_progress, submit
    from dihera.validation import DEFAULT_NAMESPACE, load_job

    def show(status: Mapping[str, object]) -> None:
        print(f"  {format_progress(status)}", file=sys.stderr, flush=True)

    try:
        manifests = read_manifests(args.file)
        jobs = [load_job(d.body, namespace=args.namespace, source=f"{args.file} {d.where}") for d in manifests.jobs]
        api = api_client(args.kubeconfig, args.context)
        for doc in manifests.others:
            print(f"{apply_object(api, doc.body, args.namespace or jobs[0].namespace or DEFAULT_NAMESPACE)} applied")
        for job in jobs:
            created = submit(job, api=api, namespace=args.namespace)
            meta = metadata(created)
            print(f"dijob {meta['namespace']}/{meta['name']} created")
            if args.wait:
                status = JobStore(api).wait_for_phase(meta["namespace"], meta["name"], args.wait, args.timeout, show)
                print(f"dijob {meta['namespace']}/{meta['name']} {status.get('phase')}")
    except (ValueError, InvalidJobError, WaitTimeout, RuntimeError) as err:
        print(err, file=sys.stderr)
        return 1
    except ResourceNotFoundError as err:
        print(f"the API server does not serve this kind: {err}", file=sys.stderr)
        return 1
    except ApiException as err:
        print(f"the API server refused an object: {describe_api_error(err)}", file=sys.stderr)
        return 1
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``submit`` to the ``dihera`` command."""
    p = sub.add_parser(
        "submit", help="create a file's other objects (ConfigMaps...), then its DIJobs; optionally wait for a phase"
    )
    p.add_argument("file", metavar="FILE", help="YAML file ('-' for stdin)")
    p.add_argument("-n", "--namespace", help="namespace (overrides metadata.namespace of the DIJobs)")
    p.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config)")
    p.add_argument("--context", help="kubeconfig context")
    p.add_argument("--wait", metavar="PHASE", help="wait until the job reaches PHASE (e.g. Running, Succeeded)")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds to wait (default 600)")
    p.set_defaults(func=_cmd_submit)
