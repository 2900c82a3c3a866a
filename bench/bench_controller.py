"""Controller benchmark on the local control plane (figures printed, not asserted).

    python bench/bench_controller.py [--jobs 50] [--replicas 10] [--rounds 3] [--memory-jobs 500]

1. time from creation to all pods Running: the same rendered Workflows created directly (baseline) and
   DIJobs through the controller, 1 job and N jobs of R replicas; ratio = controller / direct (after
   one warm-up job, whose time is printed on its own: the controller's first render loads Hera). Each
   size runs ``--rounds`` direct/controller pairs, alternating, and prints the ratio of their medians
   last: one pair's ratio moves by ±0.2 between runs on this machine, mostly the direct run's;
2. status-sync latency: the last pod of a job seen Running (watch) → its DIJob seen Running (watch);
3. API writes per job, counted by the controller (``dihera_api_writes_total``): from creation to the
   DIJob status saying Running, and apart from those, while the run's namespace is deleted;
4. API reads (GET, LIST) per reconcile in the steady state: every pod and DIJob of running jobs touched
   (an annotation: one watch event each), and the requests of one hand edit of ``replicas``
   (``dihera_api_requests_total``, ``dihera_reconcile_duration_seconds_count``);
5. controller RSS idle (started, no job yet), after the runs above, with M DIJobs (single-replica,
   completing quickly) and after they were deleted (``--memory-only``: this step alone).

Each timed run also says on stderr how many CPU seconds each process of the local control plane used
in it (bench/cpu.py): the controller's own share beside Argo's; and how many watch events the API
server sent, by resource, to all watchers together (bench/watch_events.py): the difference between a
controller run and its direct run is the controller's watch traffic. ``--controller-args`` passes
flags to the controller (e.g. ``--pod-batch-seconds 1.0``) to compare settings; ``--skip single,steady``
leaves out the 1-job size and step 4 (bench/bench_refactor.py runs it six times); ``--metrics-port`` moves the
controller's metrics off 18090 when another cluster's benchmark may hold it.

Runs a controller of its own (standalone) on namespaces ``dihera-test-bench-*`` (the demo controller
skips ``dihera-test-*``); the direct runs use ``dihera-test-direct-*``, which it does not watch, so the
baseline is Argo alone. Needs $KUBECONFIG or .devcluster/kubeconfig. kwok nodes hold 440 pods here:
N x R above that is capped. Each run's namespace and pods are gone before the next run starts, so
the direct and the controller runs find the same free node capacity.
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException

REPO = Path(__file__).resolve().parents[1]
DIHERA = str(Path(sys.executable).with_name("dihera"))
PREFIX = "dihera-test-bench"  # the controller's namespaces (it watches PREFIX-*)
DIRECT_PREFIX = "dihera-test-direct"  # the direct runs' namespaces, which it does not watch
METRICS_PORT = 18090
STEADY_JOBS, STEADY_REPLICAS = 4, 5
sys.path.insert(0, str(REPO))

from cpu import breakdown, cpu_seconds  # noqa: E402
from crd import install_crd  # noqa: E402
from watch_events import sent, watch_events  # noqa: E402

from dihera import load_job, render  # noqa: E402
from dihera.kube.jobs import JobStore  # noqa: E402
from dihera.kube.objects import ObjectStore  # noqa: E402


def job_manifest(name: str, ns: str, replicas: int, run_seconds: str) -> dict[str, Any]:
    tmpl = {
        "metadata": {"annotations": {"sim.dihera.io/run-seconds": run_seconds}},
        "spec": {"containers": [{"name": "main", "image": "opendilab/ding:nightly", "command": ["ditask"]}]},
    }
    return {
        "apiVersion": "diengine.opendilab.org/v2alpha1",
        "kind": "DIJob",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"backoffLimit": 0, "tasks": [{"type": "collector", "replicas": replicas, "template": tmpl}]},
    }


class Watcher:
    """Local receive times: when each job's pods were all Running, when its DIJob was seen Running."""

    def __init__(self, api: client.ApiClient, ns: str, replicas: int) -> None:
        self.api, self.ns, self.replicas = api, ns, replicas
        self.running: dict[str, set[str]] = {}
        self.pods_running_at: dict[str, float] = {}
        self.status_running_at: dict[str, float] = {}
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=f, daemon=True) for f in (self._pods, self._jobs)]
        for t in self._threads:
            t.start()

    def _pods(self) -> None:
        core = client.CoreV1Api(self.api)
        for ev in self._stream(core.list_namespaced_pod, self.ns, label_selector="diengine/job"):
            pod, now = ev["object"], time.monotonic()
            job = pod.metadata.labels["diengine/job"]
            if pod.status.phase == "Running":
                seen = self.running.setdefault(job, set())
                seen.add(pod.metadata.labels["diengine/pod"])
                if len(seen) == self.replicas and job not in self.pods_running_at:
                    self.pods_running_at[job] = now
            if self._stop.is_set():
                return

    def _jobs(self) -> None:
        custom = client.CustomObjectsApi(self.api)
        args = ("diengine.opendilab.org", "v2alpha1", self.ns, "dijobs")
        for ev in self._stream(custom.list_namespaced_custom_object, *args):
            obj, now = ev["object"], time.monotonic()
            if (obj.get("status") or {}).get("phase") == "Running":
                self.status_running_at.setdefault(obj["metadata"]["name"], now)
            if self._stop.is_set():
                return

    def _stream(self, func: Any, *args: Any, **kwargs: Any) -> Iterator[dict[str, Any]]:
        """Watch events until stopped: a watch the API server ends (or that breaks) is listed and opened
        again, so no Running transition is missed (the receive times above keep the first sighting)."""
        while not self._stop.is_set():
            try:
                yield from watch.Watch().stream(func, *args, timeout_seconds=300, **kwargs)
            except (ApiException, OSError) as err:
                print(f"  (watch of {self.ns} restarted: {err.__class__.__name__})", file=sys.stderr)
                time.sleep(0.5)

    def stop(self) -> None:
        self._stop.set()


def wait_all_running(w: Watcher, names: list[str], timeout: float) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(n in w.pods_running_at for n in names):
            return max(w.pods_running_at[n] for n in names)
        time.sleep(0.1)
    raise SystemExit(f"timed out: {sum(n in w.pods_running_at for n in names)}/{len(names)} jobs had all pods Running")


def new_namespace(core: client.CoreV1Api, tag: str, prefix: str = PREFIX) -> str:
    ns = f"{prefix}-{tag}-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": ns}})
    for _ in range(100):
        if core.list_namespaced_service_account(ns).items:
            break
        time.sleep(0.1)
    return ns


def delete_and_wait(core: client.CoreV1Api, ns: str, timeout: float = 300) -> None:
    """Delete a run's namespace; wait until it and its pods are gone, so the next run finds the nodes free."""
    core.delete_namespace(ns)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            core.read_namespace(ns)
        except ApiException as err:
            if err.status != 404:
                raise
            if not core.list_namespaced_pod(ns, limit=1).items:
                return
        time.sleep(0.5)
    raise SystemExit(f"namespace {ns} still not gone after {timeout:.0f}s")


def direct(api: client.ApiClient, n: int, r: int) -> float:
    core, objects = client.CoreV1Api(api), ObjectStore(api)
    ns = new_namespace(core, "direct", DIRECT_PREFIX)  # not watched by the controller: Argo alone
    w = Watcher(api, ns, r)
    names = [f"j{i}" for i in range(n)]
    rendered = [render(load_job(job_manifest(x, ns, r, "600"))) for x in names]
    cpu, events, t0 = cpu_seconds(), watch_events(api), time.monotonic()
    for rj in rendered:
        for obj in rj.objects():
            objects.create(obj)
    t = wait_all_running(w, names, 600) - t0
    progress(api, f"direct {n} x {r}", t, cpu, events)
    w.stop()
    delete_and_wait(core, ns)
    return t


@dataclass
class Writes:
    """The controller's API writes (``verb,kind`` → count) from creating the DIJobs to their status saying
    Running, and while their namespace was deleted (pods go first: phases and cleanup follow)."""

    running: dict[str, float] = field(default_factory=dict)
    teardown: dict[str, float] = field(default_factory=dict)

    def add(self, other: Writes) -> None:
        for mine, theirs in ((self.running, other.running), (self.teardown, other.teardown)):
            for k, v in theirs.items():
                mine[k] = mine.get(k, 0) + v


def _delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {k: v - before.get(k, 0) for k, v in after.items() if v - before.get(k, 0)}


def via_controller(api: client.ApiClient, n: int, r: int) -> tuple[float, list[float], Writes]:
    core, jobs = client.CoreV1Api(api), JobStore(api)
    ns = new_namespace(core, "ctl")
    w = Watcher(api, ns, r)
    names = [f"j{i}" for i in range(n)]
    writes_at_start = metrics()
    cpu, events, t0 = cpu_seconds(), watch_events(api), time.monotonic()
    for x in names:
        jobs.create(job_manifest(x, ns, r, "600"))
    t = wait_all_running(w, names, 600) - t0
    progress(api, f"controller {n} x {r}", t, cpu, events)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not all(x in w.status_running_at for x in names):
        time.sleep(0.1)
    lat = [w.status_running_at[x] - w.pods_running_at[x] for x in names if x in w.status_running_at]
    w.stop()
    writes_at_running = metrics()
    delete_and_wait(core, ns)
    writes = Writes(_delta(writes_at_start, writes_at_running), _delta(writes_at_running, metrics()))
    return t, lat, writes


def progress(
    api: client.ApiClient, what: str, seconds: float, cpu_before: dict[str, float], events_before: dict[str, Any]
) -> None:
    """Say on stderr that ``what`` took ``seconds`` to all pods Running, what each component used meanwhile
    and how many watch events the API server sent (to every watcher)."""
    print(
        f"[bench_controller] {what}: {seconds:.1f} s (CPU: {breakdown(cpu_before, cpu_seconds())}; "
        f"watch events sent: {sent(events_before, watch_events(api))})",
        file=sys.stderr,
    )


def scrape() -> dict[str, float]:
    """Every sample of the controller's /metrics: ``name{labels}`` → value."""
    with urllib.request.urlopen(f"http://127.0.0.1:{METRICS_PORT}/metrics", timeout=5) as resp:
        text = resp.read().decode()
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            sample, value = line.rsplit(" ", 1)
            out[sample] = float(value)
    return out


def metrics() -> dict[str, float]:
    """``dihera_api_writes_total`` by ``verb,kind`` labels."""
    return {k.split("{")[1].split("}")[0]: v for k, v in scrape().items() if k.startswith("dihera_api_writes_total")}


def requests_by_verb(before: dict[str, float], after: dict[str, float]) -> dict[str, int]:
    """``verb kind`` → requests between two scrapes (None when the controller does not count them)."""
    out: dict[str, int] = {}
    for key, value in after.items():
        if key.startswith("dihera_api_requests_total{"):
            labels = dict(part.split("=", 1) for part in key.split("{")[1].rstrip("}").split(","))
            n = int(value - before.get(key, 0))
            if n:
                out[f"{labels['verb'].strip(chr(34))} {labels['kind'].strip(chr(34))}"] = n
    return out


def reconciles(sample: dict[str, float]) -> float:
    return sample.get("dihera_reconcile_duration_seconds_count", 0.0)


def wait_quiet(seconds: float = 2.0, timeout: float = 120) -> dict[str, float]:
    """Scrape until the controller made no reconcile for ``seconds``; the last scrape."""
    last, since, deadline = scrape(), time.monotonic(), time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = scrape()
        if reconciles(now) != reconciles(last):
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= seconds:
            return now
    return last


def reads(delta: dict[str, int]) -> str:
    gets = sum(n for k, n in delta.items() if k.startswith("get "))
    lists = sum(n for k, n in delta.items() if k.startswith("list "))
    return f"{gets} GET + {lists} LIST"


def dijob_phase(api: client.ApiClient, ns: str, name: str) -> dict[str, Any]:
    obj = client.CustomObjectsApi(api).get_namespaced_custom_object(
        "diengine.opendilab.org", "v2alpha1", ns, "dijobs", name
    )
    return dict(obj.get("status") or {})


def steady_state(api: client.ApiClient) -> None:
    """Reads per reconcile when running jobs' pods and DIJobs change, then the requests of one hand edit."""
    core, custom, jobs = client.CoreV1Api(api), client.CustomObjectsApi(api), JobStore(api)
    ns = new_namespace(core, "steady")
    w = Watcher(api, ns, STEADY_REPLICAS)
    names = [f"s{i}" for i in range(STEADY_JOBS)]
    for x in names:
        jobs.create(job_manifest(x, ns, STEADY_REPLICAS, "600"))
    wait_all_running(w, names, 300)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not all(x in w.status_running_at for x in names):
        time.sleep(0.2)
    w.stop()
    before = wait_quiet()
    touch = {"metadata": {"annotations": {"bench.dihera.io/touched": str(time.time())}}}
    pods = core.list_namespaced_pod(ns, label_selector="diengine/job").items
    for p in pods:
        core.patch_namespaced_pod(p.metadata.name, ns, touch)
    for x in names:
        custom.patch_namespaced_custom_object("diengine.opendilab.org", "v2alpha1", ns, "dijobs", x, touch)
    after = wait_quiet()
    delta, passes = requests_by_verb(before, after), reconciles(after) - reconciles(before)
    per = {k: round(n / passes, 2) for k, n in delta.items()} if passes else {}
    print(f"steady state: {len(pods)} pod + {len(names)} DIJob events -> {passes:.0f} reconciles; API reads per "
          f"reconcile: {reads({k: round(n / passes) for k, n in delta.items()}) if passes else '-'}  (all requests per "
          f"reconcile: {per or 'none'})")  # fmt: skip
    before = after
    where = ("diengine.opendilab.org", "v2alpha1", ns, "dijobs", names[0])
    tasks = custom.get_namespaced_custom_object(*where)["spec"]["tasks"]  # as kubectl edit: a merge patch
    tasks[0]["replicas"] = STEADY_REPLICAS + 1
    custom.patch_namespaced_custom_object(
        *where, {"spec": {"tasks": tasks}}, _content_type="application/merge-patch+json"
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        status = dijob_phase(api, ns, names[0])
        if status.get("replicas") == STEADY_REPLICAS + 1 and status.get("phase") == "Running":
            break
        time.sleep(0.2)
    after = wait_quiet()
    delta, passes = requests_by_verb(before, after), reconciles(after) - reconciles(before)
    print(f"hand edit of replicas {STEADY_REPLICAS} -> {STEADY_REPLICAS + 1} (to Running again): {reads(delta)} in "
          f"{passes:.0f} reconciles; all requests: {delta or 'not counted by this controller'}")  # fmt: skip
    delete_and_wait(core, ns)


def rss_mib(pid: int, field: str = "VmRSS") -> float:
    """``field`` of /proc/<pid>/status in MiB: VmRSS now, VmHWM the peak so far."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return 0.0


def memory(api: client.ApiClient, pid: int, m: int, after_runs: bool = True) -> None:
    """RSS before, with ``m`` single-replica DIJobs that finish in 1 s, and after their namespace is deleted."""
    core, jobstore = client.CoreV1Api(api), JobStore(api)
    ns = new_namespace(core, "mem")
    if after_runs:
        print(f"controller RSS after the runs above: {rss_mib(pid):.0f} MiB")
    for i in range(m):
        jobstore.create(job_manifest(f"m{i}", ns, 1, "1"))
    deadline = time.monotonic() + 300
    done = 0
    while time.monotonic() < deadline:
        items = client.CustomObjectsApi(api).list_namespaced_custom_object(
            "diengine.opendilab.org", "v2alpha1", ns, "dijobs"
        )["items"]
        done = sum(1 for j in items if (j.get("status") or {}).get("phase") == "Succeeded")
        if done == m:
            break
        time.sleep(2)
    print(f"controller RSS with {m} DIJobs: {rss_mib(pid):.0f} MiB ({done} Succeeded within the time cap)")
    delete_and_wait(core, ns)
    time.sleep(10)  # the DELETED events reach the controller
    print(f"controller RSS after the {m} DIJobs were deleted: {rss_mib(pid):.0f} MiB "
          f"(peak so far {rss_mib(pid, 'VmHWM'):.0f} MiB)")  # fmt: skip


def latencies(seconds: list[float]) -> str:
    """p50 / p99 in milliseconds."""
    return f"{pct(seconds, 0.5) * 1000:7.0f} / {pct(seconds, 0.99) * 1000:.0f}"


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(q * (len(values) - 1)))] if values else float("nan")


def main() -> int:
    global METRICS_PORT  # scrape() reads it; one controller per run, set from --metrics-port
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=50)
    parser.add_argument("--replicas", type=int, default=10)
    parser.add_argument("--memory-jobs", type=int, default=500)
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="direct and controller runs of each size, alternating; the ratio of their medians is printed last",
    )
    parser.add_argument("--steady-only", action="store_true", help="only the API reads (steady state, hand edit)")
    parser.add_argument(
        "--memory-only", action="store_true", help="only the RSS: idle, with M DIJobs, after deleting them"
    )
    parser.add_argument(
        "--metrics-port",
        type=int,
        default=METRICS_PORT,
        help=f"the controller's metrics port (default {METRICS_PORT}; another cluster's benchmark may hold it)",
    )
    parser.add_argument(
        "--controller-args", default="", help="more arguments for the controller, e.g. '--pod-batch-seconds 0.25'"
    )
    parser.add_argument(
        "--skip",
        default="",
        help="comma-separated steps to leave out, for shorter runs: single (the 1-job size), steady (the API reads)",
    )
    args = parser.parse_args()
    skip = {s for s in args.skip.split(",") if s}
    if skip - {"single", "steady"}:
        parser.error(f"--skip: unknown step(s) {sorted(skip - {'single', 'steady'})}; valid: single, steady")
    METRICS_PORT = args.metrics_port
    kubeconfig = os.environ.get("KUBECONFIG") or str(REPO / ".devcluster" / "kubeconfig")
    install_crd(kubeconfig)
    api = config.new_client_from_config(config_file=kubeconfig)
    n = min(args.jobs, 440 // args.replicas)
    (REPO / ".devcluster" / "logs").mkdir(parents=True, exist_ok=True)
    log = open(REPO / ".devcluster" / "logs" / "bench-controller.log", "ab")  # noqa: SIM115
    argv = [DIHERA, "controller", "--kubeconfig", kubeconfig, "-n", f"{PREFIX}-*", "--standalone"]
    argv += ["--metrics-port", str(METRICS_PORT), "--health-port", "0", *shlex.split(args.controller_args)]
    proc = subprocess.Popen(argv, stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                scrape()
                break
            except OSError:
                time.sleep(0.2)
        time.sleep(3)
        print(f"controller RSS idle (started, no DIJob): {rss_mib(proc.pid):.0f} MiB")
        if args.steady_only:
            steady_state(api)
            return 0
        if args.memory_only:
            memory(api, proc.pid, args.memory_jobs, after_runs=False)
            return 0
        # the controller's first job loads what rendering needs (Hera's models); measured on its own, and
        # kept out of the runs below, which compare the per-job cost with creating the Workflow directly
        cold, _, _ = via_controller(api, 1, 1)
        print(f"first DIJob after start (1 x 1, loads the rendering code): {cold:.2f} s to all pods Running")
        print("jobs x replicas  direct(s)  controller(s)  ratio  status-sync p50/p99 (ms)")
        writes = Writes()
        jobs_done = 0
        for jobs in (n,) if "single" in skip else (1, n):
            directs, controllers, lats = [], [], []
            for _ in range(args.rounds):
                d = direct(api, jobs, args.replicas)
                c, lat, run_writes = via_controller(api, jobs, args.replicas)
                writes.add(run_writes)
                jobs_done += jobs
                directs.append(d)
                controllers.append(c)
                lats += lat
                print(f"{jobs:>4} x {args.replicas:<8}  {d:9.2f}  {c:13.2f}  {c / d:5.2f}  {latencies(lat)}")
            if args.rounds > 1:
                d, c = statistics.median(directs), statistics.median(controllers)
                label = f"median of {args.rounds}"
                print(f"{label:<15}  {d:9.2f}  {c:13.2f}  {c / d:5.2f}  {latencies(lats)}")
        for what, counts in (("creation to status Running", writes.running), ("namespace deleted", writes.teardown)):
            per_job = sum(counts.values()) / jobs_done
            print(f"API writes per job ({what}, {jobs_done} jobs): {per_job:.1f}  {counts}")
        if "steady" not in skip:
            steady_state(api)
        memory(api, proc.pid, args.memory_jobs)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
