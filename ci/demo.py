"""`make demo`: run a DIJob end to end on the local control plane (or $KUBECONFIG's cluster).

Steps: install the chart (or only the CRD when the chart is absent or does not lint), with its
controller and server Deployments scaled to 0; start `dihera controller` as a local background
process (pid and log in .devcluster/); submit the demo DIJob; show its progress until Succeeded;
print its status. The controller keeps running until `make demo-stop` (or `make cluster-down`).

    python ci/demo.py [--job FILE] [--namespace NS] [--timeout S]
    python ci/demo.py --stop
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
STATE = REPO / ".devcluster"
PIDFILE = STATE / "dihera-controller.pid"
LOGFILE = STATE / "logs" / "dihera-controller.log"
BIN = Path(sys.executable).parent
DIHERA = str(BIN / "dihera")
METRICS_PORT, HEALTH_PORT = 18080, 18081
#: The demo controller leaves the integration tests' namespaces to the tests' own controllers.
WATCH = "*,!dihera-test-*"


def say(msg: str) -> None:
    print(f"==> {msg}", file=sys.stderr, flush=True)


def run(
    *argv: str, stdin: str | None = None, check: bool = True, quiet: bool = False
) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(list(argv), input=stdin, text=True, capture_output=quiet, check=False)
    if check and out.returncode != 0:
        detail = (out.stderr or "").strip() if quiet else ""
        raise SystemExit(f"demo: `{' '.join(argv[:4])} ...` failed ({out.returncode}) {detail}")
    return out


def helm() -> str | None:
    cache = Path(os.environ.get("DIHERA_CACHE", Path.home() / ".cache" / "dihera")) / "bin" / "helm"
    return shutil.which("helm") or (str(cache) if cache.exists() else None)


def install(kubeconfig: str) -> None:
    chart = REPO / "charts" / "dihera"
    h = helm()
    if h and (chart / "Chart.yaml").exists() and run(h, "lint", str(chart), quiet=True, check=False).returncode == 0:
        say("installing the chart (release dihera in dihera-system; controller and server run locally)")
        run(
            h, "upgrade", "--install", "dihera", str(chart), "--kubeconfig", kubeconfig,
            "-n", "dihera-system", "--create-namespace", "--take-ownership", "--wait", "--timeout", "120s",
            "--set", "controller.replicas=0", "--set", "server.replicas=0",
        )  # fmt: skip
        return
    say("installing the DIJob CRD (no chart, or it does not lint)")
    crd = run(DIHERA, "crd", quiet=True).stdout
    run("kubectl", f"--kubeconfig={kubeconfig}", "apply", "--server-side", "--force-conflicts", "-f", "-", stdin=crd)
    run("kubectl", f"--kubeconfig={kubeconfig}", "wait", "--for=condition=Established",
        "crd/dijobs.diengine.opendilab.org", "--timeout=60s")  # fmt: skip


def controller_pid() -> int | None:
    try:
        pid = int(PIDFILE.read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except (OSError, ValueError):
        return None
    return pid if b"controller" in cmdline and any(arg.endswith(b"dihera") for arg in cmdline) else None


def start_controller(kubeconfig: str) -> None:
    pid = controller_pid()
    if pid:
        say(f"controller already running (pid {pid}, log {LOGFILE.relative_to(REPO)})")
        return
    LOGFILE.parent.mkdir(parents=True, exist_ok=True)
    argv = [DIHERA, "controller", "--kubeconfig", kubeconfig, "-n", WATCH, "--standalone",
            "--metrics-port", str(METRICS_PORT), "--health-port", str(HEALTH_PORT)]  # fmt: skip
    with LOGFILE.open("ab") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    PIDFILE.write_text(f"{proc.pid}\n")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"demo: the controller exited ({proc.returncode}); see {LOGFILE}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{METRICS_PORT}/readyz", timeout=2):
                say(f"controller running (pid {proc.pid}, log {LOGFILE.relative_to(REPO)}, "
                    f"metrics http://127.0.0.1:{METRICS_PORT}/metrics)")  # fmt: skip
                return
        except OSError:
            time.sleep(0.5)
    raise SystemExit(f"demo: the controller did not become ready; see {LOGFILE}")


def stop_controller() -> None:
    pid = controller_pid()
    if pid:
        os.kill(pid, signal.SIGTERM)
        for _ in range(100):
            if not Path(f"/proc/{pid}").exists():
                break
            time.sleep(0.1)
        say(f"controller stopped (pid {pid})")
    PIDFILE.unlink(missing_ok=True)


def start_server(kubeconfig: str) -> None:
    """The di-server (issue 6) when `dihera server` exists; writes .devcluster/di-server-url."""
    helptext = run(DIHERA, "--help", quiet=True, check=False).stdout
    if " server" not in helptext:
        say("no `dihera server` yet: skipping the di-server")
        return
    say("the di-server is started by its own tooling once it exists (not wired in this demo yet)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--job", default=str(REPO / "workflows" / "atari-dqn.yaml"), help="DIJob file to submit")
    parser.add_argument("--namespace", default="default")
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--stop", action="store_true", help="stop the demo's controller and exit")
    args = parser.parse_args()
    if args.stop:
        stop_controller()
        return 0
    kubeconfig = os.environ.get("KUBECONFIG") or str(STATE / "kubeconfig")
    if not Path(kubeconfig).is_file():
        raise SystemExit(f"demo: no kubeconfig at {kubeconfig}; run `make cluster-up` or set KUBECONFIG")
    kubectl = ["kubectl", f"--kubeconfig={kubeconfig}", "-n", args.namespace]
    install(kubeconfig)
    start_controller(kubeconfig)
    start_server(kubeconfig)
    name = yaml.safe_load(Path(args.job).read_text())["metadata"]["name"]
    run(*kubectl, "delete", "dijob", name, "--ignore-not-found", "--wait=true", quiet=True)
    say(f"submitting {args.job} to namespace {args.namespace}; progress:")
    code = run(
        DIHERA, "submit", args.job, "--kubeconfig", kubeconfig, "-n", args.namespace,
        "--wait", "Succeeded", "--timeout", str(args.timeout), check=False,
    ).returncode  # fmt: skip
    say("kubectl get dijob")
    run(*kubectl, "get", "dijob", name, check=False)
    say("its status")
    status = run(*kubectl, "get", "dijob", name, "-o", "yaml", quiet=True, check=False).stdout
    print(status[status.find("\nstatus:") + 1 :] if "\nstatus:" in status else status)
    say(f"the controller keeps running (log {LOGFILE.relative_to(REPO)}); stop it with `make demo-stop` or "
        "`make cluster-down`")  # fmt: skip
    return code


if __name__ == "__main__":
    sys.exit(main())
