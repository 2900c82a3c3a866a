"""di-server benchmark on the local control plane (figures printed, not asserted; 127.0.0.1 only).

    python bench/bench_server.py [--requests 2000] [--clients 4] [--gets 1] [--rounds 2]

1. GET throughput and latency: ``dihera server`` (the real entry point: uvicorn, auth on, watch caches)
   as a subprocess on a loopback port; N ``GET /v2alpha1/job/<ns>.<name>/replicas`` over C keep-alive
   clients (threads on the standard library's http.client, light enough not to be the bottleneck)
   once the caches are warm; requests/s, p50, p99. Baseline in the same run: as many ``GET /healthz``
   (no auth, no job: the HTTP stack alone) over the same clients. Ratio = replicas / healthz req/s.
   Goal (issue 12): >= 2,000 req/s with p99 <= 20 ms.
2. Scale-up 2 -> 6 collectors: from the request to the 4 new pods Running (watch receive times).
   Baseline in the same run: an identical job whose Workflow gets the same 4 DAG tasks by one JSON
   patch (planned by dihera.scaling, no server, no ConfigMap or DIJob write). Ratio = server / direct.

Needs $KUBECONFIG or .devcluster/kubeconfig; installs the DIJob CRD (bench/crd.py).
Works in a namespace ``dihera-test-srvbench-*``, deleted at the end.
"""

from __future__ import annotations

import argparse
import http.client
import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
from kubernetes import client, config, watch

REPO = Path(__file__).resolve().parents[1]
DIHERA = str(Path(sys.executable).with_name("dihera"))
ARGO = ("argoproj.io", "v1alpha1", "workflows")
sys.path.insert(0, str(REPO))

from crd import install_crd  # noqa: E402

from dihera import load_job, render  # noqa: E402
from dihera.membership import Membership  # noqa: E402
from dihera.scaling import ScaleRequest, plan_scale, workflow_patch  # noqa: E402
from dihera.schema import GROUP, PLURAL, VERSION  # noqa: E402


def job_manifest(name: str, ns: str, collectors: int) -> dict[str, Any]:
    def task(type_: str, replicas: int) -> dict[str, Any]:
        return {
            "type": type_,
            "replicas": replicas,
            "template": {
                "metadata": {"annotations": {"sim.dihera.io/run-seconds": "900"}},
                "spec": {"containers": [{"name": "main", "image": "opendilab/ding:nightly", "command": ["sleep"]}]},
            },
        }

    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "DIJob",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"maxReplicas": 20, "tasks": [task("learner", 1), task("collector", collectors)]},
    }


def start_job(api: client.ApiClient, ns: str, name: str) -> None:
    """The DIJob and, as the controller would, its ConfigMap, Service and Workflow."""
    custom, core = client.CustomObjectsApi(api), client.CoreV1Api(api)
    stored = custom.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, job_manifest(name, ns, 2))
    rendered = render(load_job(stored))
    core.create_namespaced_config_map(ns, rendered.configmap)
    core.create_namespaced_service(ns, rendered.service)
    custom.create_namespaced_custom_object(*ARGO[:2], ns, ARGO[2], rendered.workflow)


class RunningPods:
    """Local receive time of each pod's first Running, by hostname (``diengine/pod``)."""

    def __init__(self, api: client.ApiClient, ns: str) -> None:
        self.at: dict[str, float] = {}
        self._cond = threading.Condition()
        self._stopped = False
        self._watch = watch.Watch()
        core = client.CoreV1Api(api)
        self._thread = threading.Thread(target=self._run, args=(core, ns), daemon=True)
        self._thread.start()

    def _run(self, core: client.CoreV1Api, ns: str) -> None:
        try:
            self._follow(core, ns)
        except Exception:  # the watch is cut when the benchmark stops it
            if not self._stopped:
                raise

    def _follow(self, core: client.CoreV1Api, ns: str) -> None:
        for ev in self._watch.stream(core.list_namespaced_pod, ns, label_selector="diengine/pod", timeout_seconds=900):
            pod = ev["object"]
            if pod.status.phase == "Running":
                with self._cond:
                    self.at.setdefault(pod.metadata.labels["diengine/pod"], time.monotonic())
                    self._cond.notify_all()

    def wait(self, hosts: set[str], timeout: float = 120) -> float:
        """Monotonic time the last of ``hosts`` was seen Running."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not hosts <= set(self.at):
                if not self._cond.wait(max(0.0, deadline - time.monotonic())):
                    raise TimeoutError(
                        f"pods not Running after {timeout}s: {sorted(hosts - set(self.at))} "
                        "(kwok nodes full? other benchmarks running?)"
                    )
            return max(self.at[h] for h in hosts)

    def stop(self) -> None:
        self._stopped = True
        self._watch.stop()


def token_for(api: client.ApiClient, ns: str) -> str:
    """A ServiceAccount token that may get and patch DIJobs in ``ns`` (what a DI-engine pod would hold)."""
    core, rbac = client.CoreV1Api(api), client.RbacAuthorizationV1Api(api)
    core.create_namespaced_service_account(ns, {"metadata": {"name": "bench"}})
    rule = {"apiGroups": [GROUP], "resources": ["dijobs"], "verbs": ["get", "patch"]}
    rbac.create_namespaced_role(ns, {"metadata": {"name": "bench"}, "rules": [rule]})
    rbac.create_namespaced_role_binding(
        ns,
        {
            "metadata": {"name": "bench"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "bench"},
            "subjects": [{"kind": "ServiceAccount", "name": "bench", "namespace": ns}],
        },
    )
    spec = client.V1TokenRequestSpec(audiences=[], expiration_seconds=3600)
    token: str = core.create_namespaced_service_account_token("bench", ns, {"spec": spec}).status.token
    return token


def start_server(kubeconfig: str, ns: str, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # plain HTTP (asked for) on loopback: the figures are the di-server's work, TLS's is the same for any server
    argv = [DIHERA, "server", "--plain-http", "--kubeconfig", kubeconfig, "--host", "127.0.0.1", "--port", str(port),
            "-n", ns]  # fmt: skip
    with log.open("wb") as out:
        proc = subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "DIHERA_LOG_LEVEL": "warning"}
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                return proc, url
        except httpx.TransportError:
            pass
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    proc.kill()
    raise RuntimeError(f"dihera server did not become ready; log:\n{log.read_text(errors='replace')[-2000:]}")


def bench_gets(url: str, path: str, token: str | None, total: int, clients: int) -> tuple[float, list[float]]:
    """Requests per second and the sorted latencies of ``total`` GETs of ``path`` over ``clients`` connections."""
    host, port = url.removeprefix("http://").split(":")
    headers = {"Authorization": f"Bearer {token}"} if token else {}

    def worker(n: int) -> list[float]:
        times = []
        conn = http.client.HTTPConnection(host, int(port), timeout=30)
        try:
            for _ in range(n):
                started = time.perf_counter()
                conn.request("GET", path, headers=headers)
                resp = conn.getresponse()
                body = resp.read()
                times.append(time.perf_counter() - started)
                if resp.status != 200:
                    raise RuntimeError(f"GET {path}: {resp.status} {body[:300]!r}")
        finally:
            conn.close()
        return times

    worker(50)  # warm: auth cache, connections, first-request costs
    share = [total // clients + (1 if i < total % clients else 0) for i in range(clients)]
    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        latencies = sorted(t for ts in pool.map(worker, share) for t in ts)
    return total / (time.perf_counter() - started), latencies


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def report_gets(url: str, ns: str, token: str, total: int, clients: int, server_pid: int) -> None:
    """GET replicas (auth on) against GET /healthz on the same server and clients.

    Also the server's CPU time per request: unlike req/s, it hardly moves when other work shares the
    cores, and 1 / (CPU per request) is what one free core would serve.
    """
    rows = []
    for name, path, bearer in (
        ("GET /healthz (baseline)", "/healthz", None),
        ("GET replicas, auth on", f"/v2alpha1/job/{ns}.server-0/replicas", token),
    ):
        cpu = cpu_seconds(server_pid)
        rate, latencies = bench_gets(url, path, bearer, total, clients)
        per_request = (cpu_seconds(server_pid) - cpu) / (total + 50)
        rows.append(rate)
        p = statistics.quantiles(latencies, n=100)
        print(
            f"{name:<24} {total} requests, {clients} clients: {rate:,.0f} req/s; p50 {p[49] * 1000:.1f} ms, "
            f"p99 {p[98] * 1000:.1f} ms, max {latencies[-1] * 1000:.1f} ms; "
            f"server CPU {per_request * 1e6:.0f} us/request ({1 / per_request:,.0f} req/s per core)"
        )
    p99 = statistics.quantiles(latencies, n=100)[98] * 1000
    print(
        f"GET replicas / healthz: ratio {rows[1] / rows[0]:.2f}; goal >= 2,000 req/s (ratio {rows[1] / 2000:.2f}), "
        f"p99 <= 20 ms (ratio {p99 / 20:.2f}); load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )


def scale_direct(api: client.ApiClient, ns: str, name: str) -> None:
    """The same 4 new DAG tasks, planned by dihera.scaling, patched into the Workflow without the server."""
    custom, core = client.CustomObjectsApi(api), client.CoreV1Api(api)
    job = load_job(custom.get_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, name))
    membership = Membership.from_json(core.read_namespaced_config_map(f"di-{name}", ns).data["membership.json"])
    wf = custom.get_namespaced_custom_object(*ARGO[:2], ns, ARGO[2], name)
    plan = plan_scale(job, membership, wf, ScaleRequest.set_replicas("collector", 6))
    ops = workflow_patch(plan.membership, wf)
    custom.patch_namespaced_custom_object(
        *ARGO[:2], ns, ARGO[2], name, ops, _content_type="application/json-patch+json"
    )


def scale_up(api: client.ApiClient, ns: str, names: list[str], url: str, token: str, pods: RunningPods) -> None:
    """Each job 2 -> 6 collectors, directly or through the server; time to the 4 new pods Running."""
    new = [f"collector-{i}" for i in (2, 3, 4, 5)]
    times: dict[str, list[float]] = {"direct": [], "server": []}
    for name in names:
        kind = name.split("-")[0]
        started = time.monotonic()
        if kind == "direct":
            scale_direct(api, ns, name)
        else:
            resp = httpx.put(
                f"{url}/v1/namespaces/{ns}/dijobs/{name}/tasks/collector/replicas",
                json={"replicas": 6},
                headers={"Authorization": f"Bearer {token}"},
                timeout=60,
            )
            if resp.status_code != 200:
                raise RuntimeError(f"scale via the server: {resp.status_code} {resp.text}")
        answered = time.monotonic() - started
        done = pods.wait({f"{name}-{n}" for n in new}) - started
        times[kind].append(done)
        print(f"scale-up 2->6 {name}: request answered in {answered * 1000:.0f} ms, 4 new pods Running {done:.2f} s")
    direct, server = statistics.median(times["direct"]), statistics.median(times["server"])
    print(
        f"scale-up to Running (median of {len(times['server'])}): server {server:.2f} s, direct patch {direct:.2f} s, "
        f"ratio {server / direct:.2f}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2, help="scale-up measurements of each kind (0: none)")
    parser.add_argument("--gets", type=int, default=1, help="GET measurements, one after another")
    args = parser.parse_args()
    kubeconfig = os.environ.get("KUBECONFIG") or str(REPO / ".devcluster" / "kubeconfig")
    install_crd(kubeconfig)
    api = config.new_client_from_config(config_file=kubeconfig)
    core = client.CoreV1Api(api)
    ns = f"dihera-test-srvbench-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": ns, "labels": {"dihera.io/test": "true"}}})
    pods = RunningPods(api, ns)
    proc = None
    try:
        while True:  # the default ServiceAccount must exist before pods are created
            if any(sa.metadata.name == "default" for sa in core.list_namespaced_service_account(ns).items):
                break
            time.sleep(0.2)
        names = [f"{kind}-{i}" for i in range(max(args.rounds, 1)) for kind in ("direct", "server")]
        for name in names:
            start_job(api, ns, name)
        for name in names:
            pods.wait({f"{name}-learner-0", f"{name}-collector-0", f"{name}-collector-1"})
        token = token_for(api, ns)
        proc, url = start_server(kubeconfig, ns, Path(f"/tmp/{ns}.log"))
        report_gets(url, ns, token, args.requests, args.clients, proc.pid)

        if args.gets > 1:
            for _ in range(args.gets - 1):
                report_gets(url, ns, token, args.requests, args.clients, proc.pid)
        if args.rounds:
            scale_up(api, ns, names, url, token, pods)
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
        pods.stop()
        core.delete_namespace(ns)
    return 0


if __name__ == "__main__":
    sys.exit(main())
