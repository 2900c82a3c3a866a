"""Command line: python -m ci.devcluster up|down|status|di-engine-image|images|kueue-up|kueue-down
[--state-dir DIR] [--json] [--feature-gates A=true,B=false] [--build-only] [--without-di-engine].

`di-engine-image`: build the DI-engine image if its inputs changed and import it into the real node
when one runs here (ci/devcluster/dingimage.py; not done at `up`: it is ~5 GB; `--build-only`: no
import). `images`: build, when their inputs changed, every image that needs no Go program (the Python
base, the project's image, Redis's, the DI-engine image; `--without-di-engine`: not that one) without
importing any. `make test` runs `images --without-di-engine` in the background while `tools` compiles,
then `di-engine-image --build-only` in the background beside the first tests (ci/bg.sh).
`kueue-up` / `kueue-down`: start / stop Kueue's manager on the running dev cluster (ci/devcluster/kueue.py;
`--feature-gates`, or $DIHERA_KUEUE_FEATURE_GATES, adds Kueue feature gates to its configuration)."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path

from . import dingimage, images, realnode
from .cluster import Cluster, ClusterError
from .kueue import Kueue, KueueError, parse_feature_gates
from .settings import Settings


def _print_status(report: dict[str, object]) -> None:
    components = report["components"]
    assert isinstance(components, dict)
    if not components:
        print(f"down (no state in {report['state_dir']})")
        return
    for name, info in components.items():
        state = f"running  pid {info['pid']}" if info["running"] else "stopped"
        port = f"127.0.0.1:{info['port']}" if info["port"] else "-"
        print(f"{name:<24} {state:<20} {port}")
    print(f"api ready: {report['api_ready']}  nodes ready: {report.get('nodes_ready', 0)}")
    nodes = report.get("nodes", {})
    assert isinstance(nodes, dict)
    for name, node in nodes.items():
        kind = f"real ({node['runtime']})" if node["real"] else "simulated (kwok)"
        print(f"  node {name:<22} {'Ready' if node['ready'] else 'NotReady':<9} {kind}")
    if report.get("argo_ui_url"):
        print(f"Argo UI: {report['argo_ui_url']}")
    if report.get("kubeconfig"):
        print(f"export KUBECONFIG={report['kubeconfig']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ci.devcluster", description=__doc__)
    commands = ("up", "down", "status", "di-engine-image", "images", "kueue-up", "kueue-down")
    parser.add_argument("command", choices=commands)
    parser.add_argument("--state-dir", type=Path, help="state directory (default: .devcluster/ in the repo)")
    parser.add_argument("--json", action="store_true", help="status as JSON")
    parser.add_argument(
        "--feature-gates",
        default=os.environ.get("DIHERA_KUEUE_FEATURE_GATES", ""),
        help="kueue-up: Kueue feature gates, A=true,B=false (default: $DIHERA_KUEUE_FEATURE_GATES)",
    )
    parser.add_argument("--build-only", action="store_true", help="di-engine-image: build, import nothing")
    parser.add_argument("--without-di-engine", action="store_true", help="images: all but the DI-engine image")
    args = parser.parse_args(argv)
    logging.basicConfig(format="[devcluster] %(message)s", level=logging.INFO, stream=sys.stderr)

    cluster = Cluster(Settings.from_environ(state_dir=args.state_dir.resolve() if args.state_dir else None))
    try:
        if args.command == "up":
            cluster.up()
        elif args.command == "di-engine-image":
            socket = realnode.node_files(cluster.state).containerd_socket
            if socket.exists() and not args.build_only:
                dingimage.ensure_ding_image(cluster.settings, socket, realnode.CONTAINERD_NAMESPACE)
            else:
                dingimage.build_ding_image(cluster.settings)
                why = "--build-only" if args.build_only else "no real node running here"
                logging.getLogger("devcluster").info("%s: built, not imported", why)
        elif args.command == "images":
            images.dockerfile_images(cluster.settings)
            if not args.without_di_engine:
                dingimage.build_ding_image(cluster.settings)
        elif args.command == "down":
            cluster.down()
        elif args.command == "kueue-up":
            Kueue(cluster.settings).up(parse_feature_gates(args.feature_gates))
        elif args.command == "kueue-down":
            Kueue(cluster.settings).down()
        else:
            report = cluster.status()
            print(json.dumps(report, indent=2)) if args.json else _print_status(report)
            return 0 if report["up"] else 3
    except (ClusterError, KueueError) as err:
        logging.getLogger("devcluster").error("%s", err)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
