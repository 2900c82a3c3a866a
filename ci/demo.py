"""`make demo`: a real DI-engine job end to end, run by the chart's own components.

On the local control plane (no $KUBECONFIG): the chart `charts/dihera` is installed with the image built
here from the Dockerfile (charts/dihera/ci/realnode-values.yaml), so the controller and the di-server run
as pods on the real node; the DI-engine image is built (first run only: a ~3 GB download) and imported
into the node; then the cartpole DQN DIJob (workflows/cartpole-dqn.yaml: learner, evaluator, two
collectors) trains on the real node until the evaluator reaches the stop value. The terminal shows the
job's phase and replicas, the replicas joining the mesh (read from the pods' logs), the return and env
steps/s as the job trains (status.training, read every 2 s: docs/training-figures.md), then the final
status, the di-server's view of the job, and last the URL of its learning curve.

On $KUBECONFIG's cluster: the chart is installed unless a release `dihera` already exists (set
DEMO_HELM_ARGS, e.g. `--set image.repository=registry.example/dihera`, for your registry's image), and
the job runs with the image DEMO_DI_ENGINE_IMAGE (default: the job's own, `dihera/di-engine:0.5.3`),
without the local node's placement.

On the local control plane the Argo UI (argo server, on 127.0.0.1) shows the job's Workflow: its URL is
printed and written to .devcluster/argo-ui-url.

The di-server is reached through `kubectl port-forward` on 127.0.0.1, started again whenever it ends
(it ends with the pod it forwards to: the URL outlives a di-server pod's replacement). Its pid is in
.devcluster/, its URL in .devcluster/di-server-url (HTTPS, as the chart serves by default: the
certificate names 127.0.0.1, and its CA, which the chart publishes, is copied to
.devcluster/di-server-ca.crt), a 24 h bearer token of ServiceAccount `dihera-demo` in
.devcluster/di-server-token. On the local control plane that is the port the Argo UI's links point at
(Argo's ConfigMap, docs/argo-ui.md), and the di-server's read-only views open without a token. The
controller watches only the demo's namespace (default dihera-demo), so the tests' own controllers keep
theirs.

    python ci/demo.py [--job FILE] [--namespace NS] [--timeout S]
    python ci/demo.py --stop [--uninstall]   # stop the port-forward (and uninstall the release)
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import shlex
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from ci.devcluster import realnode  # noqa: E402
from dihera.constants import LABEL_JOB  # noqa: E402

STATE = REPO / ".devcluster"
FORWARD_PIDFILE = STATE / "di-server-forward.pid"
FORWARD_LOG = STATE / "logs" / "di-server-forward.log"
SERVER_URL = STATE / "di-server-url"
SERVER_TOKEN = STATE / "di-server-token"
SERVER_CA = STATE / "di-server-ca.crt"
UI_URL = STATE / "argo-ui-url"
DEMO_ACCOUNT = "dihera-demo"
RELEASE, RELEASE_NAMESPACE = "dihera", "dihera-system"
CHART = REPO / "charts" / "dihera"
REALNODE_VALUES = CHART / "ci" / "realnode-values.yaml"
DIHERA = str(Path(sys.executable).parent / "dihera")
#: The example's log lines the demo shows (examples/cartpole/cartpole_dqn/__init__.py: the contract).
SHOWN = re.compile(
    r"^dihera-(role|learner-up|learner-seen|learner-wait-timeout|eval|stop-value-reached|progress"
    r"|metrics-failed|figures-failed) "
)
#: Seconds between two reads of the DIJob's status.training (the di-server writes it at most once a second).
TRAINING_POLL = 2.0


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


def helm() -> str:
    cache = Path(os.environ.get("DIHERA_CACHE", Path.home() / ".cache" / "dihera")) / "bin" / "helm"
    found = shutil.which("helm") or (str(cache) if cache.exists() else None)
    if not found:
        raise SystemExit("demo: no helm; run `make tools`")
    return found


def prepare_job(doc: dict[str, Any], image: str | None, local_node: bool) -> dict[str, Any]:
    """The demo's copy of the job: every container on ``image`` (when given, never pulled on the local node)
    and, off the local control plane, without the real node's nodeSelector and toleration."""
    out = copy.deepcopy(doc)
    key, _ = realnode.NODE_LABEL
    for task in out["spec"]["tasks"]:
        pod = task["template"]["spec"]
        for container in pod.get("containers", []):
            if image:
                container["image"] = image
                if local_node:
                    container["imagePullPolicy"] = "Never"
        if not local_node:
            pod.get("nodeSelector", {}).pop(key, None)
            pod["tolerations"] = [t for t in pod.get("tolerations", []) if t.get("key") != key]
            for field in ("nodeSelector", "tolerations"):
                if not pod.get(field):
                    pod.pop(field, None)
    return out


#: The evaluation step: a stored policy as its input artifact, played in CartPole (docs/artifacts.md).
EVALUATE = REPO / "workflows" / "argo" / "evaluate-policy.yaml"
#: Its result line (examples/cartpole/cartpole_dqn/evaluate.py).
EVALUATED = re.compile(r"dihera-evaluated file=(\S+) episodes=(\d+) mean=([0-9.]+) min=([0-9.]+) params=(\d+)")
#: Where the demo downloads the job's artifacts.
OUTPUTS = STATE / "demo-outputs"


def evaluation_workflow(
    namespace: str, key: str, image: str | None, local_node: bool, account: str | None = None
) -> dict[str, Any]:
    """workflows/argo/evaluate-policy.yaml for the artifact ``key``: on ``image`` (never pulled on the local
    node; off it, without the real node's placement), under ServiceAccount ``account`` when given."""
    doc: dict[str, Any] = yaml.safe_load(EVALUATE.read_text())
    doc["metadata"]["namespace"] = namespace
    doc["spec"]["arguments"]["parameters"][0]["value"] = key
    if account:
        doc["spec"]["serviceAccountName"] = account
    (template,) = doc["spec"]["templates"]
    if image:
        template["container"]["image"] = image
        if local_node:
            template["container"]["imagePullPolicy"] = "Never"
    if not local_node:
        template.pop("nodeSelector", None)
        template.pop("tolerations", None)
    return doc


def stored_policy(kubeconfig: str, namespace: str, name: str, timeout: float = 120) -> dict[str, str] | None:
    """The learner's final ``policy`` in the job's ``status.artifacts`` (written once Argo stored it), else the
    evaluator's ``best-policy`` (DI-engine writes the final one only if the learner runs once more after its
    finish), else None."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = run("kubectl", f"--kubeconfig={kubeconfig}", "-n", namespace, "get", "dijob", name, "-o", "json",
                  check=False, quiet=True)  # fmt: skip
        stored = (json.loads(got.stdout or "{}").get("status") or {}).get("artifacts") or []
        found = [a for name in ("policy", "best-policy") for a in stored if a.get("name") == name]
        if found and (found[0]["name"] == "policy" or time.monotonic() > deadline - timeout / 2):
            return dict(found[0])
        time.sleep(2)
    return None


def play_policy(kubeconfig: str, namespace: str, name: str, image: str | None, local_node: bool) -> None:
    """After the job: where its trained policy is, downloaded (through argo server), and played again in CartPole
    by an Argo step that takes it as its input artifact."""
    policy = stored_policy(kubeconfig, namespace, name)
    if policy is None:
        say("no trained policy in status.artifacts (does the cluster have an Argo artifact repository?)")
        return
    say(f"the trained policy: {policy['replica']}'s `policy`, key {policy.get('key')} in the artifact repository")
    server = argo_ui_url() if local_node else os.environ.get("ARGO_SERVER")
    if server:
        shutil.rmtree(OUTPUTS, ignore_errors=True)
        run(DIHERA, "outputs", f"{namespace}/{name}", "--kubeconfig", kubeconfig, "--argo-server", server,
            "--download", str(OUTPUTS), check=False)  # fmt: skip
    doc = evaluation_workflow(namespace, str(policy.get("key")), image, local_node)
    made = run("kubectl", f"--kubeconfig={kubeconfig}", "create", "-o", "name", "-f", "-", stdin=yaml.safe_dump(doc),
               check=False, quiet=True)  # fmt: skip
    workflow = (made.stdout or "").strip()
    if made.returncode != 0 or not workflow:
        say(f"could not create the evaluation Workflow: {(made.stderr or '').strip()}")
        return
    say(f"playing it again: {workflow} (workflows/argo/evaluate-policy.yaml) loads it into DI-engine's DQN policy")
    kubectl = ["kubectl", f"--kubeconfig={kubeconfig}", "-n", namespace]
    run(*kubectl, "wait", workflow, "--for=jsonpath={.status.phase}=Succeeded", "--timeout=300s", check=False,
        quiet=True)  # fmt: skip
    logs = run(*kubectl, "logs", "-l", f"workflows.argoproj.io/workflow={workflow.split('/')[-1]}", "-c", "main",
               check=False, quiet=True).stdout or ""  # fmt: skip
    lines = [m.group(0) for m in EVALUATED.finditer(logs)]
    say(lines[-1] if lines else f"no result; kubectl -n {namespace} logs -l workflows.argoproj.io/workflow=...")


def argo_ui_url() -> str | None:
    """The local control plane's argo server (None: this pair runs none)."""
    from ci.devcluster import Cluster, Settings

    return Cluster(Settings.from_environ()).argo_ui_url()


def install_chart(kubeconfig: str, namespace: str, local_node: bool) -> None:
    """The chart, its controller and di-server watching ``namespace`` (local: the image built here, on the
    real node); on a given cluster an existing release is used as it is."""
    h, where = helm(), ["--kubeconfig", kubeconfig, "-n", RELEASE_NAMESPACE]
    if not local_node and run(h, "status", RELEASE, *where, quiet=True, check=False).returncode == 0:
        say(f"using the installed release {RELEASE} in {RELEASE_NAMESPACE}")
        return
    args = ["--set", f"watchNamespaces={{{namespace}}}", *os.environ.get("DEMO_HELM_ARGS", "").split()]
    if local_node:
        from ci.devcluster.images import package_version
        from ci.devcluster.settings import Settings

        args += ["-f", str(REALNODE_VALUES), "--set", f"image.tag={package_version(Settings.from_environ())}"]
        # the Argo UI's links (a browser sends no token) open the di-server's read-only views
        args += ["--set", "server.anonymousViews=true"]
    say(f"installing the chart: release {RELEASE} in {RELEASE_NAMESPACE}, watching namespace {namespace}")
    run(
        h, "upgrade", "--install", RELEASE, str(CHART), *where, "--create-namespace", "--take-ownership",
        "--wait", "--timeout", "180s", *args,
    )  # fmt: skip
    say("controller and di-server Ready: kubectl -n dihera-system get pods -o wide")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def forward_pid() -> int | None:
    """The pid in FORWARD_PIDFILE if that process is still our `kubectl port-forward`."""
    try:
        pid = int(FORWARD_PIDFILE.read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError):
        return None
    return pid if b"port-forward" in cmdline else None


def reserved_port(local_node: bool) -> int | None:
    """The local control plane's di-server port (Argo's UI links point there: dihera.argo_ui), else None."""
    if not local_node:
        return None
    from ci.devcluster.state import StateDir

    return (StateDir(STATE).load_ports() or {}).get("di-server")


def supervised_forward(kubeconfig: str, namespace: str, service: str, port: int, log: Path) -> subprocess.Popen[bytes]:
    """`kubectl port-forward` of ``service``'s port ``http`` to 127.0.0.1:``port``, started again a second after
    it exits. It exits when the pod it picked goes away (a di-server pod deleted, evicted or replaced by a
    rollout), and the next one picks a pod of the Service again: the URL outlives the pod. One process
    group (a new session): stop it with os.killpg."""
    forward = shlex.join(["kubectl", f"--kubeconfig={kubeconfig}", "-n", namespace, "port-forward",
                          "--address=127.0.0.1", f"svc/{service}", f"{port}:http"])  # fmt: skip
    loop = f'while :; do {forward}; echo "port-forward ended ($?); again in 1s"; sleep 1; done'
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        return subprocess.Popen(["bash", "-c", loop], stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def server_tls(kubeconfig: str) -> tuple[str, ssl.SSLContext | None]:
    """How the release's di-server is reached: ``https`` or ``http`` (the scheme of the URL its settings give
    the pods), and the context that trusts its CA, copied to SERVER_CA when the chart published it
    (ConfigMap ``<release>-server-ca``, server.tls.source=generate); None: the system's CAs."""
    where = [f"--kubeconfig={kubeconfig}", "-n", RELEASE_NAMESPACE]
    url = run("kubectl", *where, "get", "configmap", f"{RELEASE}-settings",
              "-o", "jsonpath={.data.DIHERA_SERVER_URL}", quiet=True, check=False).stdout.strip()  # fmt: skip
    if not url.startswith("https://"):
        return "http", None
    ca = run("kubectl", *where, "get", "configmap", f"{RELEASE}-server-ca",
             "-o", "jsonpath={.data.ca\\.crt}", quiet=True, check=False).stdout  # fmt: skip
    if "BEGIN CERTIFICATE" not in ca:
        SERVER_CA.unlink(missing_ok=True)
        return "https", None
    SERVER_CA.write_text(ca)
    return "https", ssl.create_default_context(cafile=str(SERVER_CA))


def forward_server(kubeconfig: str, port: int | None = None) -> tuple[str, ssl.SSLContext | None]:
    """The di-server's Service on 127.0.0.1:``port`` (default: a free one; the API server dials the pod)
    through :func:`supervised_forward`; its URL and the TLS context that trusts it (:func:`server_tls`)."""
    scheme, context = server_tls(kubeconfig)
    if forward_pid() and SERVER_URL.is_file():
        return SERVER_URL.read_text().strip(), context
    port = port or free_port()
    proc = supervised_forward(kubeconfig, RELEASE_NAMESPACE, f"{RELEASE}-server", port, FORWARD_LOG)
    FORWARD_PIDFILE.write_text(f"{proc.pid}\n")
    url = f"{scheme}://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/readyz", timeout=2, context=context):
                SERVER_URL.write_text(url + "\n")
                return url, context
        except OSError:
            time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGTERM)
    raise SystemExit(f"demo: the di-server did not answer through the port-forward; see {FORWARD_LOG}")


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


def shown(lines: Iterable[str]) -> Iterator[str]:
    """The example's progress lines among a pod's log (DI-engine's own output is left out)."""
    for line in lines:
        text = line.split(" ", 1)[1] if line.startswith("[pod/") else line
        if SHOWN.match(text.strip()):
            yield line.rstrip()


def follow_logs(kubeconfig: str, namespace: str, job: str, container: str, done: threading.Event) -> None:
    """Print the replicas' progress lines as they come, until ``done`` (pods appear and restart: retry)."""
    argv = ["kubectl", f"--kubeconfig={kubeconfig}", "-n", namespace, "logs", "-f", "--prefix",
            "--max-log-requests=20", "-c", container, "-l", f"{LABEL_JOB}={job}"]  # fmt: skip
    seen: set[str] = set()
    while not done.is_set():
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert proc.stdout is not None
        for line in shown(proc.stdout):
            if line not in seen:  # a retried follow repeats the start of the logs
                seen.add(line)
                say(line)
            if done.is_set():
                break
        proc.kill()
        done.wait(3)


def training_line(training: dict[str, Any] | None) -> str | None:
    """One terminal line of the job's RL figures (``status.training``): the return and env steps/s first;
    None when nothing was reported yet."""
    if not training:
        return None
    evaluation = training.get("evaluation") or {}
    parts = []
    if "value" in evaluation:
        parts.append(f"return={evaluation['value']:.1f} (best {evaluation.get('best', evaluation['value']):.1f} "
                     f"at iter {evaluation.get('bestIteration', '-')})")  # fmt: skip
    if "envStepsPerSecond" in training:
        parts.append(f"env_steps/s={training['envStepsPerSecond']:.1f}")
    if "iteration" in training:
        parts.append(f"iter={training['iteration']}")
    if "dataWaitFraction" in training:
        parts.append(f"data_wait={training['dataWaitFraction']:.2f}")
    if training.get("nonFinite"):
        parts.append("not finite: " + ",".join(training["nonFinite"]))
    return "training: " + " ".join(parts) if parts else None


def follow_training(kubeconfig: str, namespace: str, name: str, done: threading.Event) -> None:
    """Print the job's RL figures (status.training, written by the di-server from the replicas' reports)
    whenever they change, until ``done``."""
    argv = ["kubectl", f"--kubeconfig={kubeconfig}", "-n", namespace, "get", "dijob", name, "-o",
            "jsonpath={.status.training}"]  # fmt: skip
    last = None
    while not done.wait(TRAINING_POLL):
        got = subprocess.run(argv, capture_output=True, text=True, check=False)
        try:
            line = training_line(json.loads(got.stdout)) if got.returncode == 0 and got.stdout.strip() else None
        except ValueError:
            continue
        if line is not None and line != last:
            last = line
            say(line)


def curve_url(url: str, namespace: str, name: str) -> str:
    """The di-server's live learning curve of the job (SVG)."""
    return f"{url}/ui/namespaces/{namespace}/dijobs/{name}/curve.svg"


def ask_server(url: str, token: str, namespace: str, name: str, context: ssl.SSLContext | None) -> None:
    """Show the di-server's view of the job (an authenticated GET)."""
    request = urllib.request.Request(
        f"{url}/v1/namespaces/{namespace}/dijobs/{name}", headers={"Authorization": f"Bearer {token}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10, context=context) as resp:
            print(json.dumps(json.loads(resp.read()), indent=2))
    except OSError as err:
        say(f"the di-server did not answer: {err}")


def show_checkpoint(kubeconfig: str, namespace: str, name: str) -> None:
    """The learner's last checkpoint as it reported it (``status.profilings.checkpoint``, through the di-server:
    its pods' ServiceAccount ``default`` holds the chart's reporter role), or why there is none."""
    got = run("kubectl", f"--kubeconfig={kubeconfig}", "-n", namespace, "get", "dijob", name, "-o", "json",
              check=False, quiet=True)  # fmt: skip
    reported = ((json.loads(got.stdout or "{}").get("status") or {}).get("profilings") or {}).get("checkpoint")
    if reported:
        say(f"the learner's last checkpoint (status.profilings.checkpoint): {json.dumps(reported)}")
        return
    say(
        "no checkpoint reported in status.profilings: may the job's pods report? "
        f"kubectl -n {namespace} auth can-i create dijobs.diengine.opendilab.org --subresource=profilings "
        f"--as system:serviceaccount:{namespace}:default (the chart's role {RELEASE}-reporter, bound in each of "
        "watchNamespaces; the learner's log says dihera-metrics-failed)"
    )


def stop(kubeconfig: str | None, uninstall: bool) -> int:
    pid = forward_pid()
    if pid:
        os.killpg(pid, signal.SIGTERM)  # the loop and its kubectl (supervised_forward)
        say(f"port-forward stopped (pid {pid})")
    for path in (FORWARD_PIDFILE, SERVER_URL, SERVER_TOKEN):
        path.unlink(missing_ok=True)
    if uninstall and kubeconfig and Path(kubeconfig).is_file():
        run(helm(), "uninstall", RELEASE, "--kubeconfig", kubeconfig, "-n", RELEASE_NAMESPACE, "--wait",
            check=False, quiet=True)  # fmt: skip
        say(f"release {RELEASE} uninstalled")
    return 0


def argo_ui(namespace: str) -> str | None:
    """The local control plane's Argo UI: its workflow list for ``namespace`` (None: this pair runs none)."""
    url = argo_ui_url()
    if url is None:
        return None
    UI_URL.write_text(url + "\n")
    return f"{url}/workflows/{namespace}"


def di_engine_image(local_node: bool) -> str | None:
    """The image the job's containers run: built here and imported into the real node, or DEMO_DI_ENGINE_IMAGE."""
    if not local_node:
        return os.environ.get("DEMO_DI_ENGINE_IMAGE") or None
    from ci.devcluster import Cluster, Settings, dingimage

    cluster = Cluster(Settings.from_environ())
    socket = realnode.node_files(cluster.state).containerd_socket
    say("the DI-engine image (first run: built from ci/images/di-engine, a ~3 GB download)")
    report = dingimage.ensure_ding_image(cluster.settings, socket, realnode.CONTAINERD_NAMESPACE, progress=say)
    return str(report.image.name)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--job", default=str(REPO / "workflows" / "cartpole-dqn.yaml"), help="DIJob file to run")
    parser.add_argument("--namespace", default="dihera-demo")
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--stop", action="store_true", help="stop the port-forward to the di-server, and exit")
    parser.add_argument("--uninstall", action="store_true", help="with --stop: uninstall the chart release too")
    args = parser.parse_args()
    given = os.environ.get("KUBECONFIG")
    kubeconfig = given or str(STATE / "kubeconfig")
    if args.stop:
        return stop(kubeconfig, args.uninstall)
    if not Path(kubeconfig).is_file():
        raise SystemExit(f"demo: no kubeconfig at {kubeconfig}; run `make cluster-up` or set KUBECONFIG")
    local_node = not given
    kubectl = ["kubectl", f"--kubeconfig={kubeconfig}", "-n", args.namespace]
    run("kubectl", f"--kubeconfig={kubeconfig}", "create", "namespace", args.namespace, check=False, quiet=True)
    install_chart(kubeconfig, args.namespace, local_node)
    image = di_engine_image(local_node)
    doc = prepare_job(yaml.safe_load(Path(args.job).read_text()), image, local_node)
    name = doc["metadata"]["name"]
    container = doc["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["name"]
    url, context = forward_server(kubeconfig, reserved_port(local_node))
    token = demo_token(kubeconfig, args.namespace)
    ui = argo_ui(args.namespace) if local_node else None
    if ui:
        say(f"the Argo UI: {ui} (its URL also in {UI_URL.relative_to(REPO)})")
    run(*kubectl, "delete", "dijob", name, "--ignore-not-found", "--wait=true", quiet=True)
    say(f"submitting {Path(args.job).relative_to(REPO) if Path(args.job).is_absolute() else args.job} "
        f"to namespace {args.namespace}; its phases, then the replicas' progress from their logs:")  # fmt: skip
    done = threading.Event()
    follower = threading.Thread(
        target=follow_logs, args=(kubeconfig, args.namespace, name, container, done), daemon=True
    )
    follower.start()
    figures = threading.Thread(target=follow_training, args=(kubeconfig, args.namespace, name, done), daemon=True)
    figures.start()
    try:
        code = run(
            DIHERA, "submit", "-", "--kubeconfig", kubeconfig, "-n", args.namespace,
            "--wait", "Succeeded", "--timeout", str(args.timeout), stdin=yaml.safe_dump(doc), check=False,
        ).returncode  # fmt: skip
    finally:
        done.set()
    say("kubectl get dijob -o wide (Checkpoint: the iteration of the learner's last reported checkpoint)")
    run(*kubectl, "get", "dijob", name, "-o", "wide", check=False)
    show_checkpoint(kubeconfig, args.namespace, name)
    if code == 0:
        play_policy(kubeconfig, args.namespace, name, image, local_node)
    say(f"its pods: kubectl -n {args.namespace} get pods -l {LABEL_JOB}={name} -o wide")
    run(*kubectl, "get", "pods", "-l", f"{LABEL_JOB}={name}", "-o", "wide", check=False)
    say(f"the di-server's view: GET {url}/v1/namespaces/{args.namespace}/dijobs/{name}")
    ask_server(url, token, args.namespace, name, context)
    say(f"the Workflow: kubectl -n {args.namespace} get workflow {name} -o yaml; "
        f"logs: kubectl -n {args.namespace} logs -l {LABEL_JOB}={name} -c {container}")  # fmt: skip
    ca = f" --ca-file {SERVER_CA.relative_to(REPO)}" if SERVER_CA.is_file() and url.startswith("https") else ""
    say(
        f"scale a running job: dihera scale {args.namespace}/NAME --task collector --add 1 "
        f"--server $(cat {SERVER_URL.relative_to(REPO)}) --token $(cat {SERVER_TOKEN.relative_to(REPO)}){ca}"
    )
    if ui:
        say(f"the job in the Argo UI: {ui}/{name}")
    say("stop: `make demo-stop` (port-forward, release) or `make cluster-down` (everything)")
    say(f"the learning curve (return and env steps/s over iterations): {curve_url(url, args.namespace, name)}")
    return code


if __name__ == "__main__":
    sys.exit(main())
