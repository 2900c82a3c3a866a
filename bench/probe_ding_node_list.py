"""DI-engine's own k8s parser on the DI_NODES dihera renders for the worst-case 2,000-replica job.

    .venv/bin/python bench/probe_ding_node_list.py <python of a venv with DI-engine>

Renders 1 learner + 2,000 collectors + 1 evaluator with the longest job name the hostname rule
allows (48 characters) in a 63-character namespace, then, for the largest rank, execs that python
with the rendered DI_RANK / DI_NODES (the exec itself is the test of the kernel's limit) and runs
``ding/entry/cli_parsers/k8s_parser.py`` exactly as ``ditask --platform k8s --topology mesh`` does
(loaded from the venv by path, so that DI-engine's heavy package imports are skipped). It prints
what DI-engine takes as the process's address and how many peers it dials, and the same for the
FQDN list the job would have had (which does not exec).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from dihera import RenderSettings, load_job, plan_membership  # noqa: E402
from dihera.naming import Addressing  # noqa: E402
from dihera.render.env import membership_lists, node_lists  # noqa: E402

JOB, NAMESPACE = "j" * 48, "n" * 63
CHILD = """
    import importlib.util, os, sys, sysconfig
    path = os.path.join(sysconfig.get_paths()["purelib"], "ding/entry/cli_parsers/k8s_parser.py")
    spec = importlib.util.spec_from_file_location("k8s_parser", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    task = module.k8s_parser(None, topology="mesh")  # what ditask --platform k8s --topology mesh calls
    print("DI-engine", path)
    print("  address", task["address"], "node_ids", task["node_ids"], "ports", task["ports"])
    print("  dials", len(task["attach_to"].split(",")), "peers, first", task["attach_to"].split(",")[0])
"""


def main() -> int:
    python = sys.argv[1] if len(sys.argv) > 1 else "python3"
    manifest = {
        "apiVersion": "diengine.opendilab.org/v2alpha1",
        "kind": "DIJob",
        "metadata": {"name": JOB, "namespace": NAMESPACE},
        "spec": {
            "tasks": [
                {"type": t, "replicas": n, "template": {"spec": {"containers": [{"name": "main", "image": "i"}]}}}
                for t, n in (("learner", 1), ("collector", 2000), ("evaluator", 1))
            ]
        },
    }
    job = load_job(manifest)
    membership = plan_membership(job, None)
    form, data = membership_lists(job, membership, RenderSettings())
    rank = max(r.rank for r in membership.replicas)
    fqdns = node_lists(job, membership, RenderSettings(), Addressing.FQDN)["DI_NODES"]
    for label, nodes in ((f"rendered ({form.value})", data["DI_NODES"]), ("FQDNs", fqdns)):
        print(f"{label}: DI_NODES {len(nodes)} bytes, {len(nodes.split(','))} entries, DI_RANK {rank}")
        env = {"DI_RANK": str(rank), "DI_NODES": nodes, "PATH": "/usr/bin:/bin"}
        try:
            out = subprocess.run([python, "-c", textwrap.dedent(CHILD)], env=env, capture_output=True, text=True)
        except OSError as err:
            print(f"  exec refused: {err}")
            continue
        print(textwrap.indent(out.stdout + out.stderr[-2000:], "  "), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
