"""``dihera argo-ui-config``: the Argo UI's columns and links for DIJobs, pointing at a di-server.

dihera argo-ui-config --server-url http://127.0.0.1:8081          # data of workflow-controller-configmap
dihera argo-ui-config --server-url https://di.example.com --helm  # argo-helm values (controller.*)
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["register"]


def _cmd(args: argparse.Namespace) -> int:
    from dihera.argo_ui import configmap_data, helm_values
    from dihera.manifests import dump_yaml

    try:
        out = helm_values(args.server_url) if args.helm else configmap_data(args.server_url)
    except ValueError as err:
        print(f"dihera argo-ui-config: {err}", file=sys.stderr)
        return 2
    print(dump_yaml(out), end="")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``argo-ui-config`` to the ``dihera`` command."""
    p = sub.add_parser("argo-ui-config", help="the Argo UI's columns and links for DIJobs (docs/argo-ui.md)")
    p.add_argument("--server-url", required=True, help="the di-server's URL as a browser reaches it")
    p.add_argument("--helm", action="store_true", help="as argo-helm values (controller.columns, controller.links)")
    p.set_defaults(func=_cmd)
