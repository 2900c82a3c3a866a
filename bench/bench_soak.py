"""Soak benchmark on the local control plane (kwok nodes): random operations over many DIJobs for a while,
then what was lost or doubled (figures printed, not asserted; issue 42).

    python bench/bench_soak.py [--jobs 200] [--seconds 1800] [--workers 6]

Room for every job at its maximum is added as kwok nodes (tests/integration/kwok_capacity.py) and removed
after. A controller (standalone, its own) and a di-server (``dihera server``, auth on) run as subprocesses. W
workers pick a random slot of J each and do what fits its state, one operation at a time per slot:
create the DIJob (a learner, 2 collectors; kwok pods running until deleted), add or remove a collector
through the di-server (``POST``/``DELETE /v2alpha1/job/<ns>.<name>/replicas`` with an Idempotency-Key,
sent again with the same key after a transport error), suspend or resume it, delete it. An operation
ends when the DIJob's status says it happened (watched): that wait is its **status-sync lag**, printed
as p50/p99 for each fifth of the run.

At the end, once everything settled, each slot is checked against what the answers said: a live job's
``spec`` collectors = 2 + the accepted changes, its live collector pods as many (not suspended), one
Workflow; a deleted job has no DIJob, Workflow or pod left. Every difference is **lost** (fewer, or left
behind) or **doubled** (more, or a second Workflow). The controller's and the di-server's RSS are printed
at the start (every slot's job created and Running, then ``--warmup`` seconds of the same operations, so
every code path has run once) and at the end (growth in %; goal <= 10 %), and,
sampled every ``--rss-every`` seconds through the run, the median of each fifth and the slope over the
second half (MiB per hour, least squares): a plateau (caches filled by the first operations) shows a flat
second half, a leak a steady slope.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException

REPO = Path(__file__).resolve().parents[1]
DIHERA = str(Path(sys.executable).with_name("dihera"))
PREFIX = "dihera-test-soak"
GROUP, VERSION, PLURAL = "diengine.opendilab.org", "v2alpha1", "dijobs"
sys.path.insert(0, str(REPO))

from bench_controller import rss_mib  # noqa: E402
from bench_server import start_server, token_for  # noqa: E402
from crd import install_crd  # noqa: E402

from dihera.constants import LABEL_JOB, LABEL_TASK_TYPE  # noqa: E402
from tests.integration.kwok_capacity import kwok_capacity  # noqa: E402

COLLECTORS, MAX_REPLICAS = 2, 8
SETTLE_SECONDS = 120


def job_manifest(name: str, ns: str) -> dict[str, Any]:
    def task(type_: str, replicas: int) -> dict[str, Any]:
        return {
            "type": type_,
            "replicas": replicas,
            "template": {
                "metadata": {"annotations": {"sim.dihera.io/run-seconds": "7200"}},
                "spec": {"containers": [{"name": "main", "image": "opendilab/ding:nightly", "command": ["ditask"]}]},
            },
        }

    spec = {"maxReplicas": MAX_REPLICAS, "tasks": [task("learner", 1), task("collector", COLLECTORS)]}
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "DIJob",
        "metadata": {"name": name, "namespace": ns},
        "spec": spec,
    }


@dataclass
class Slot:
    name: str
    live: bool = False
    suspended: bool = False
    collectors: int = COLLECTORS  # what the accepted answers say the spec holds
    lock: threading.Lock = field(default_factory=threading.Lock)


class Statuses:
    """The DIJobs' latest status by name, from a watch; ``wait(name, predicate)`` until it holds."""

    def __init__(self, api: client.ApiClient, ns: str) -> None:
        self.api, self.ns = api, ns
        self.latest: dict[str, dict[str, Any] | None] = {}
        self.cond = threading.Condition()
        self.stop = threading.Event()
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        """List, then watch from the list's version; again after the watch ends. The list replaces what
        is known, so a DIJob deleted while no watch ran is not kept as live (a watch restarted without a
        list would never hear of it)."""
        custom = client.CustomObjectsApi(self.api)
        while not self.stop.is_set():
            try:
                listed = custom.list_namespaced_custom_object(GROUP, VERSION, self.ns, PLURAL)
                with self.cond:
                    now = {obj["metadata"]["name"]: obj for obj in listed["items"]}
                    self.latest = {**dict.fromkeys(self.latest), **now}
                    self.cond.notify_all()
                for ev in watch.Watch().stream(
                    custom.list_namespaced_custom_object, GROUP, VERSION, self.ns, PLURAL,
                    resource_version=listed["metadata"]["resourceVersion"], timeout_seconds=60,
                ):  # fmt: skip
                    obj = ev["object"]
                    if ev["type"] not in ("ADDED", "MODIFIED", "DELETED"):
                        break  # ERROR (e.g. 410 Gone): list again
                    with self.cond:
                        gone = ev["type"] == "DELETED"
                        self.latest[obj["metadata"]["name"]] = None if gone else obj
                        self.cond.notify_all()
                    if self.stop.is_set():
                        return
            except Exception as err:  # a watch cut short (urllib3's ProtocolError is no OSError): list again
                print(f"[bench_soak] DIJob watch: {err!r}; listing again", file=sys.stderr)
                time.sleep(0.5)

    def wait(self, name: str, holds: Any, timeout: float = 120) -> float | None:
        """Seconds until ``holds(obj or None)`` is true; None after ``timeout``."""
        start = time.monotonic()
        with self.cond:
            while not holds(self.latest.get(name)):
                left = timeout - (time.monotonic() - start)
                if left <= 0:
                    return None
                self.cond.wait(left)
        return time.monotonic() - start


def phase(obj: dict[str, Any] | None) -> str | None:
    return ((obj or {}).get("status") or {}).get("phase")


def collectors_in_status(obj: dict[str, Any] | None) -> int:
    return int((((obj or {}).get("status") or {}).get("taskStatus") or {}).get("collector", {}).get("Running", 0))


class Soak:
    def __init__(self, api: client.ApiClient, ns: str, url: str, token: str, jobs: int) -> None:
        self.api, self.ns, self.url, self.token = api, ns, url, token
        self.slots = [Slot(f"soak-{i:03d}") for i in range(jobs)]
        self.statuses = Statuses(api, ns)
        self.custom = client.CustomObjectsApi(api)
        self.counts = {"done": 0, "refused": 0, "timed out": 0, "resent": 0}
        self.lags: list[tuple[float, float]] = []  # (when, lag)
        self.lock = threading.Lock()
        self.http = httpx.Client(timeout=30)

    def count(self, what: str, lag: float | None = None) -> None:
        with self.lock:
            self.counts[what] += 1
            if lag is not None:
                self.lags.append((time.monotonic(), lag))

    def settled(self, slot: Slot) -> Any:
        def holds(obj: dict[str, Any] | None) -> bool:
            if not slot.live:
                return obj is None
            if slot.suspended:
                return phase(obj) == "Suspended"
            return phase(obj) == "Running" and collectors_in_status(obj) == slot.collectors

        return holds

    def operate(self, slot: Slot, rng: random.Random) -> None:
        if not slot.live:
            self.custom.create_namespaced_custom_object(
                GROUP, VERSION, self.ns, PLURAL, job_manifest(slot.name, self.ns)
            )
            slot.live, slot.suspended, slot.collectors = True, False, COLLECTORS
        else:
            op = rng.choices(["add", "remove", "suspend", "delete"], weights=[4, 4, 2, 1])[0]
            if op in ("add", "remove"):
                if not self.scale(slot, op):
                    self.count("refused")
                    return
            elif op == "suspend":
                slot.suspended = not slot.suspended
                body = {"spec": {"suspend": slot.suspended}}
                self.custom.patch_namespaced_custom_object(GROUP, VERSION, self.ns, PLURAL, slot.name, body)
            else:
                self.custom.delete_namespaced_custom_object(GROUP, VERSION, self.ns, PLURAL, slot.name)
                slot.live = False
        lag = self.statuses.wait(slot.name, self.settled(slot))
        self.count("timed out" if lag is None else "done", lag)

    def scale(self, slot: Slot, op: str) -> bool:
        """One scale through the di-server; True if it changed the job (the slot's expectation moved)."""
        key = uuid.uuid4().hex
        headers = {"Authorization": f"Bearer {self.token}", "Idempotency-Key": key}
        url = f"{self.url}/v2alpha1/job/{self.ns}.{slot.name}/replicas"
        for _ in range(5):
            try:
                resp = self.http.request(
                    "POST" if op == "add" else "DELETE", url, json={"replicas": 1}, headers=headers
                )
            except httpx.TransportError:
                self.count("resent")
                time.sleep(1)
                continue
            if resp.status_code >= 500:
                self.count("resent")
                time.sleep(1)
                continue
            if resp.status_code == 200 and resp.json()["data"]["changed"]:
                slot.collectors += 1 if op == "add" else -1
                return True
            return False
        return False

    def worker(self, seed: int, until: float) -> None:
        rng = random.Random(seed)
        while time.monotonic() < until:
            slot = rng.choice(self.slots)
            if not slot.lock.acquire(blocking=False):
                continue
            try:
                self.operate(slot, rng)
            except ApiException as err:
                if err.status != 409:
                    raise
                self.count("refused")  # e.g. a delete still under way when the slot is created again
            finally:
                slot.lock.release()

    def check(self) -> tuple[int, int, list[str]]:
        """(lost, doubled, what) once everything settled, or as it stands SETTLE_SECONDS later."""
        deadline = time.monotonic() + SETTLE_SECONDS
        for slot in self.slots:
            self.statuses.wait(slot.name, self.settled(slot), timeout=max(1.0, deadline - time.monotonic()))
        while True:
            lost, doubled, notes = self.differences()
            if not notes or time.monotonic() > deadline:
                return lost, doubled, notes
            time.sleep(2)  # a deleted job's pods and Workflow go by garbage collection

    def differences(self) -> tuple[int, int, list[str]]:
        core = client.CoreV1Api(self.api)
        pods: dict[str, int] = {}
        for pod in core.list_namespaced_pod(self.ns, label_selector=LABEL_JOB).items:
            if pod.metadata.deletion_timestamp is None and pod.metadata.labels.get(LABEL_TASK_TYPE) == "collector":
                job = pod.metadata.labels[LABEL_JOB]
                pods[job] = pods.get(job, 0) + 1
        workflows: dict[str, int] = {}
        for wf in self.custom.list_namespaced_custom_object("argoproj.io", "v1alpha1", self.ns, "workflows")["items"]:
            for ref in wf["metadata"].get("ownerReferences", []):
                workflows[ref["name"]] = workflows.get(ref["name"], 0) + 1
        lost = doubled = 0
        notes: list[str] = []
        for slot in self.slots:
            obj = self.statuses.latest.get(slot.name)
            if not slot.live:
                if obj is not None or workflows.get(slot.name) or pods.get(slot.name):
                    lost += 1
                    notes.append(f"{slot.name}: deleted, left behind")
                continue
            if obj is None:
                lost += 1
                notes.append(f"{slot.name}: created, and not there")
                continue
            spec = next(t["replicas"] for t in obj.get("spec", {}).get("tasks", []) if t["type"] == "collector")
            running = pods.get(slot.name, 0)  # a suspended job has none
            want = 0 if slot.suspended else slot.collectors
            for got, expected, what in ((spec, slot.collectors, "spec"), (running, want, "pods")):
                if got != expected:
                    lost += got < expected
                    doubled += got > expected
                    notes.append(f"{slot.name}: {what} collectors {got}, the answers said {expected}")
            if workflows.get(slot.name, 0) > 1:
                doubled += 1
                notes.append(f"{slot.name}: {workflows[slot.name]} Workflows")
        return lost, doubled, notes


def lag_by_fifth(lags: list[tuple[float, float]], start: float, end: float) -> str:
    parts = []
    for i in range(5):
        lo, hi = start + (end - start) * i / 5, start + (end - start) * (i + 1) / 5
        values = sorted(v for t, v in lags if lo <= t < hi or (i == 4 and t >= hi))
        if not values:
            parts.append("-")
            continue
        p99 = values[min(len(values) - 1, int(len(values) * 0.99))]
        parts.append(f"{statistics.median(values):.2f}/{p99:.2f}")
    return ", ".join(parts)


class RssSampler:
    """RSS of some processes every ``every`` seconds, from a thread of its own, until stopped."""

    def __init__(self, pids: dict[str, int], every: float) -> None:
        self.samples: dict[str, list[tuple[float, float]]] = {name: [] for name in pids}
        self._pids, self._every, self._stop = pids, every, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            now = time.monotonic()
            for name, pid in self._pids.items():
                self.samples[name].append((now, rss_mib(pid)))
            self._stop.wait(self._every)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def rss_by_fifth(samples: list[tuple[float, float]], start: float, end: float) -> str:
    parts = []
    for i in range(5):
        lo, hi = start + (end - start) * i / 5, start + (end - start) * (i + 1) / 5
        values = [v for t, v in samples if lo <= t < hi or (i == 4 and t >= hi)]
        parts.append(f"{statistics.median(values):.0f}" if values else "-")
    return ", ".join(parts)


def slope_per_hour(samples: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of RSS over time, MiB per hour; None with fewer than 3 samples."""
    if len(samples) < 3:
        return None
    ts, vs = [t for t, _ in samples], [v for _, v in samples]
    mt, mv = statistics.fmean(ts), statistics.fmean(vs)
    var = sum((t - mt) ** 2 for t in ts)
    return 3600 * sum((t - mt) * (v - mv) for t, v in samples) / var if var else None


def print_rss(
    sampler: RssSampler, start: float, end: float, at_start: dict[str, float], at_end: dict[str, float]
) -> None:
    for name, before in at_start.items():
        after = at_end[name]
        print(
            f"{name} RSS: {before:.0f} MiB at start, {after:.0f} MiB at the end ({(after / before - 1) * 100:+.1f} %)"
        )
        samples = sampler.samples[name]
        second = [(t, v) for t, v in samples if t >= (start + end) / 2]
        slope = slope_per_hour(second)
        shown = "-" if slope is None else f"{slope:+.1f} MiB/h"
        print(f"  {name} RSS by fifth (median MiB): {rss_by_fifth(samples, start, end)}; second half's slope {shown}")


def run_workers(soak: Soak, workers: int, seed: int, until: float) -> None:
    threads = [threading.Thread(target=soak.worker, args=(seed + i, until)) for i in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def soak_run(args: argparse.Namespace, api: client.ApiClient, ns: str, ctl: Any, server: Any, url: str) -> None:
    """Populate, run the workers, check, print."""
    token = ""
    for _ in range(60):  # the ServiceAccount's token needs its account
        try:
            token = token_for(api, ns)
            break
        except ApiException:
            time.sleep(1)
    soak = Soak(api, ns, url, token, args.jobs)
    with ThreadPoolExecutor(args.workers) as pool:  # every job Running before the RSS at start
        list(pool.map(lambda slot: soak.operate(slot, random.Random(0)), soak.slots))
    # Warm-up: the same random operations for a while before the RSS at start, so every code path (scale,
    # suspend, delete: the Kubernetes client's API classes and their validators load on first use, ~20 MiB
    # for CoreV1Api alone) ran once and the growth measured after is what the operations keep adding.
    warmup = min(120.0, args.seconds / 5) if args.warmup is None else args.warmup
    run_workers(soak, args.workers, args.seed + 1000, time.monotonic() + warmup)
    rss_start = {"controller": rss_mib(ctl.pid), "di-server": rss_mib(server.pid)}
    sampler = RssSampler({"controller": ctl.pid, "di-server": server.pid}, args.rss_every)
    start = time.monotonic()
    run_workers(soak, args.workers, args.seed, start + args.seconds)
    end = time.monotonic()
    lost, doubled, notes = soak.check()
    rss_end = {"controller": rss_mib(ctl.pid), "di-server": rss_mib(server.pid)}
    sampler.stop()
    soak.statuses.stop.set()
    c = soak.counts
    total = c["done"] + c["refused"] + c["timed out"]
    live = sum(s.live for s in soak.slots)
    print(
        f"soak: {total} operations in {end - start:.0f} s (after {warmup:.0f} s of warm-up, counted) over "
        f"{args.jobs} DIJobs ({live} live at the end): "
        f"{c['done']} done, {c['refused']} refused, {c['timed out']} timed out, {c['resent']} resent; "
        f"lost {lost}, doubled {doubled}"
    )
    for note in notes[:20]:
        print(f"  {note}")
    print(f"status-sync lag p50/p99 (s) by fifth of the run: {lag_by_fifth(soak.lags, start, end)}")
    print_rss(sampler, start, end, rss_start, rss_end)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=1800)
    parser.add_argument("--workers", type=int, default=6)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--rss-every", type=float, default=30.0, help="seconds between RSS samples")
    parser.add_argument(
        "--warmup", type=float, help="seconds of operations before the RSS at start (default: a fifth, at most 120)"
    )
    parser.add_argument("--prefix", default=PREFIX, help="namespace prefix (two soaks on one cluster differ here)")
    parser.add_argument(
        "--controller-env", action="append", default=[], metavar="KEY=VALUE", help="extra env of the controller"
    )
    parser.add_argument("--trace-memory", metavar="FILE", help="run the controller under bench/traced.py into FILE")
    args = parser.parse_args()
    kubeconfig = os.environ.get("KUBECONFIG") or str(REPO / ".devcluster" / "kubeconfig")
    install_crd(kubeconfig)
    api = config.new_client_from_config(config_file=kubeconfig)
    core = client.CoreV1Api(api)
    ns = f"{args.prefix}-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": ns}})
    logs = REPO / ".devcluster" / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    argv = ["controller", "--kubeconfig", kubeconfig, "-n", f"{args.prefix}-*", "--standalone"]
    argv += ["--metrics-port", "0", "--health-port", "0"]
    if args.trace_memory:  # bench/traced.py: what Python memory grew, every --rss-every seconds
        argv = [sys.executable, str(REPO / "bench" / "traced.py"), args.trace_memory, str(args.rss_every), "--", *argv]
    else:
        argv = [DIHERA, *argv]
    env = {**os.environ, **dict(kv.split("=", 1) for kv in args.controller_env)}
    with (logs / f"{args.prefix}-controller.log").open("ab") as out:
        ctl = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)
    server, url = start_server(kubeconfig, ns, logs / f"{args.prefix}-server.log")
    try:
        with kwok_capacity(api, args.jobs * (1 + MAX_REPLICAS)):  # every job at its maximum at once
            soak_run(args, api, ns, ctl, server, url)
    finally:
        for proc in (ctl, server):
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
        core.delete_namespace(ns)
    return 0


if __name__ == "__main__":
    sys.exit(main())
