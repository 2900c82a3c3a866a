"""The DIJob CRD for the benchmarks: `dihera crd`, applied server-side, waited for until Established.

`make cluster-up` installs Argo's CRDs only; the benchmarks that create DIJobs call :func:`install_crd`
first, so each runs on a fresh local control plane or on $KUBECONFIG's cluster as documented.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

DIHERA = str(Path(sys.executable).with_name("dihera"))
CRD_NAME = "dijobs.diengine.opendilab.org"


def install_crd(kubeconfig: str) -> None:
    """Apply the DIJob CRD of this checkout and wait for it to be Established (idempotent)."""
    crd = subprocess.run([DIHERA, "crd"], capture_output=True, text=True, check=True).stdout
    kubectl = ["kubectl", f"--kubeconfig={kubeconfig}"]
    apply = [*kubectl, "apply", "--server-side", "--force-conflicts", "-f", "-"]
    subprocess.run(apply, input=crd, text=True, check=True, capture_output=True)
    established = [*kubectl, "wait", "--for=condition=Established", "--timeout=60s", f"crd/{CRD_NAME}"]
    subprocess.run(established, check=True, capture_output=True)
