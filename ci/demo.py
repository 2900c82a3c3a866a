"""`make demo`: run a DIJob end to end on the local control plane (or $KUBECONFIG's cluster).

Steps: install the chart (or only the CRD when the chart is absent or does not lint), with its
controller and server Deployments scaled to 0; start `dihera controller` and `dihera server` as
local background processes (pids and logs in .devcluster/; the server's URL in
.devcluster/di-server-url, a bearer token for it in .devcluster/di-server-token); submit the demo
DIJob; show its progress until Succeeded; print its status and the di-server's view of it. Both keep
running until `make demo-stop` (or `make cluster-down`).

The di-server keeps authentication on: it checks callers' bearer tokens with the API server
(TokenReview, SubjectAccessReview) through the admin kubeconfig. An admin kubeconfig holds a client
certificate, not a token, so the demo makes a ServiceAccount `dihera-demo` allowed to get and patch
DIJobs in the demo namespace and writes a 24 h token of it.

    python ci/demo.py [--job FILE] [--namespace NS] [--timeout S]
    python ci/demo.py --stop
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
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
SERVER_PIDFILE = STATE / "di-server.pid"
SERVER_LOG = STATE / "logs" / "di-server.log"
SERVER_URL = STATE / "di-server-url"
SERVER_TOKEN = STATE / "di-server-token"
DEMO_ACCOUNT = "dihera-demo"
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


def demo_pid(pidfile: Path, command: bytes) -> int | None:
    """The pid in ``pidfile`` if that process is still `dihera <command>` (a reused pid is not ours)."""
    try:
        pid = int(pidfile.read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except (OSError, ValueError):
        return None
    return pid if command in cmdline and any(arg.endswith(b"dihera") for arg in cmdline) else None


def controller_pid() -> int | None:
    return demo_pid(PIDFILE, b"controller")


def wait_ready(proc: subprocess.Popen[bytes], url: str, what: str, log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"demo: the {what} exited ({proc.returncode}); see {log}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    raise SystemExit(f"demo: the {what} did not become ready; see {log}")


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
    wait_ready(proc, f"http://127.0.0.1:{METRICS_PORT}/readyz", "controller", LOGFILE)
    say(f"controller running (pid {proc.pid}, log {LOGFILE.relative_to(REPO)}, "
        f"metrics http://127.0.0.1:{METRICS_PORT}/metrics)")  # fmt: skip


def stop(pidfile: Path, command: bytes, what: str) -> None:
    pid = demo_pid(pidfile, command)
    if pid:
        os.kill(pid, signal.SIGTERM)
        for _ in range(100):
            if not Path(f"/proc/{pid}").exists():
                break
            time.sleep(0.1)
        say(f"{what} stopped (pid {pid})")
    pidfile.unlink(missing_ok=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(kubeconfig: str) -> str:
    """`dihera server` on 127.0.0.1 and a free port, auth on; its URL goes to .devcluster/di-server-url."""
    pid = demo_pid(SERVER_PIDFILE, b"server")
    if pid and SERVER_URL.is_file():
        url = SERVER_URL.read_text().strip()
        say(f"di-server already running (pid {pid}, {url}, log {SERVER_LOG.relative_to(REPO)})")
        return url
    SERVER_LOG.parent.mkdir(parents=True, exist_ok=True)
    url = f"http://127.0.0.1:{free_port()}"
    argv = [DIHERA, "server", "--kubeconfig", kubeconfig, "--host", "127.0.0.1", "--port", url.rsplit(":", 1)[1]]
    with SERVER_LOG.open("ab") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    SERVER_PIDFILE.write_text(f"{proc.pid}\n")
    wait_ready(proc, f"{url}/readyz", "di-server", SERVER_LOG)
    SERVER_URL.write_text(url + "\n")
    say(f"di-server running (pid {proc.pid}, {url}, log {SERVER_LOG.relative_to(REPO)}; "
        f"URL in {SERVER_URL.relative_to(REPO)})")  # fmt: skip
    return url


def demo_token(kubeconfig: str, namespace: str) -> str:
    """A 24 h token of ServiceAccount dihera-demo, allowed to get and patch DIJobs in ``namespace``."""
    role = {"apiGroups": ["diengine.opendilab.org"], "resources": ["dijobs"], "verbs": ["get", "list", "patch"]}
    meta = {"name": DEMO_ACCOUNT, "namespace": namespace}
    docs = [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta, "rules": [role]},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": meta,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": DEMO_ACCOUNT},
            "subjects": [{"kind": "ServiceAccount", "name": DEMO_ACCOUNT, "namespace": namespace}],
        },
    ]  # fmt: skip
    kubectl = ["kubectl", f"--kubeconfig={kubeconfig}", "-n", namespace]
    run(*kubectl, "apply", "-f", "-", stdin=yaml.safe_dump_all(docs), quiet=True)
    token = run(*kubectl, "create", "token", DEMO_ACCOUNT, "--duration=24h", quiet=True).stdout.strip()
    SERVER_TOKEN.write_text(token + "\n")
    SERVER_TOKEN.chmod(0o600)
    return token


def ask_server(url: str, token: str, namespace: str, name: str) -> None:
    """Show the di-server's view of the job (an authenticated GET)."""
    request = urllib.request.Request(
        f"{url}/v1/namespaces/{namespace}/dijobs/{name}", headers={"Authorization": f"Bearer {token}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as resp:
            print(json.dumps(json.loads(resp.read()), indent=2))
    except OSError as err:
        say(f"the di-server did not answer: {err}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--job", default=str(REPO / "workflows" / "atari-dqn.yaml"), help="DIJob file to submit")
    parser.add_argument("--namespace", default="default")
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--stop", action="store_true", help="stop the demo's controller and di-server, and exit")
    args = parser.parse_args()
    if args.stop:
        stop(PIDFILE, b"controller", "controller")
        stop(SERVER_PIDFILE, b"server", "di-server")
        SERVER_URL.unlink(missing_ok=True)
        SERVER_TOKEN.unlink(missing_ok=True)
        return 0
    kubeconfig = os.environ.get("KUBECONFIG") or str(STATE / "kubeconfig")
    if not Path(kubeconfig).is_file():
        raise SystemExit(f"demo: no kubeconfig at {kubeconfig}; run `make cluster-up` or set KUBECONFIG")
    kubectl = ["kubectl", f"--kubeconfig={kubeconfig}", "-n", args.namespace]
    install(kubeconfig)
    start_controller(kubeconfig)
    url = start_server(kubeconfig)
    token = demo_token(kubeconfig, args.namespace)
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
    say(f"the di-server's view: GET {url}/v1/namespaces/{args.namespace}/dijobs/{name}")
    ask_server(url, token, args.namespace, name)
    say(f"the controller and the di-server keep running (logs in {LOGFILE.parent.relative_to(REPO)}); "
        "stop them with `make demo-stop` or `make cluster-down`")  # fmt: skip
    say(
        f"scale a running job: dihera scale {args.namespace}/NAME --task collector --add 1 "
        f"--server $(cat {SERVER_URL.relative_to(REPO)}) --token $(cat {SERVER_TOKEN.relative_to(REPO)})"
    )
    return code


if __name__ == "__main__":
    sys.exit(main())
